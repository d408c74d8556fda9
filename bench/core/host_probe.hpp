// Moved to core/api/host_probe.hpp, the public face of bench/core; this path stays for the files
// that still include it.
#pragma once

#include "core/api/host_probe.hpp"
