// Moved to core/api/telemetry.hpp, the public face of bench/core; this path stays for the files
// that still include it.
#pragma once

#include "core/api/telemetry.hpp"
