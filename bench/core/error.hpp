// Moved to core/api/error.hpp, the public face of bench/core; this path stays for the files that
// still include it.
#pragma once

#include "core/api/error.hpp"
