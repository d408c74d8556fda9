// The schema identifier of every document and record clusterbench writes (docs/records.md).
#pragma once

namespace clusterbench {

/// Schema identifiers written into every document (docs/design.md "Schemas").
inline constexpr const char* kRunSchema = "clusterbench.run/1";
/// env/2: a value that could not be read is null, with the reason in its object's `unknown`;
/// `nics` holds virtual interfaces too, flagged `virtual` (docs/records.md "EnvRecord").
inline constexpr const char* kEnvSchema = "clusterbench.env/2";
/// env/1 records are still read; their "not read" zeros become unknown when read (docs/records.md
/// "EnvRecord").
inline constexpr const char* kEnvSchemaV1 = "clusterbench.env/1";
inline constexpr const char* kResultSchema = "clusterbench.result/1";
/// Spec tables: /2 adds `families` (docs/records.md "Spec table"); /1 tables still load.
inline constexpr const char* kSpecSchema = "clusterbench.spec/5";    ///< adds a row's `remedy`
inline constexpr const char* kSpecSchemaV4 = "clusterbench.spec/4";  ///< adds `tiers`
inline constexpr const char* kSpecSchemaV3 = "clusterbench.spec/3";  ///< adds family `compare`
inline constexpr const char* kSpecSchemaV2 = "clusterbench.spec/2";
inline constexpr const char* kSpecSchemaV1 = "clusterbench.spec/1";
inline constexpr const char* kReportSchema = "clusterbench.report/1";
inline constexpr const char* kCompareSchema = "clusterbench.compare/3";

}  // namespace clusterbench
