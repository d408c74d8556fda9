// Moved to core/api/gpu_case.hpp, the public face of bench/core; this path stays for the files that
// still include it.
#pragma once

#include "core/api/gpu_case.hpp"
