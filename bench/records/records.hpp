// Every record type of clusterbench and its JSON (docs/records.md), in one include: schema.hpp,
// json_io.hpp (InputError, JSON files), statistics.hpp, env_record.hpp, result.hpp,
// run_record.hpp, run_dir.hpp and sha256.hpp. A file that needs one of them includes that one.
#pragma once

#include "records/env_record.hpp"
#include "records/json_io.hpp"
#include "records/result.hpp"
#include "records/run_dir.hpp"
#include "records/run_record.hpp"
#include "records/schema.hpp"
#include "records/sha256.hpp"
#include "records/statistics.hpp"
