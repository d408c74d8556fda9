// Typed knobs: each benchmark declares its --set knobs once, with a type, a default per suite, a
// unit and a one-line help; it then reads them through the typed handle the declaration returns,
// and `clusterbench list` prints the same declaration (docs/design.md "CLI": every option has
// a suite default).
#pragma once

#include <string>
#include <vector>

#include "core/api/settings.hpp"

namespace clusterbench {

/// What a knob's text means.
enum class KnobType {
  number,   ///< a decimal number ("0.05")
  integer,  ///< a whole number ("64")
  size,     ///< bytes with binary suffixes K, M, G, T ("64M")
  text,     ///< any text (a path, a profile list kept as text)
  list,     ///< comma-separated items
  choice,   ///< one of `allowed`
  choices,  ///< comma-separated items, each one of `allowed`
};

/// "number", "integer", "size", "text", "list", "choice", "choices".
const char* knob_type_name(KnobType t);

/// A knob's default per suite, as the text a user would give to --set. Empty: the benchmark
/// chooses at run time (its help says how, e.g. "default: physical cores").
struct SuiteDefault {
  std::string ci, quick, full;
  SuiteDefault() = default;
  SuiteDefault(const char* all) : ci(all), quick(all), full(all) {}  // NOLINT: one for every suite
  SuiteDefault(std::string all) : ci(all), quick(all), full(all) {}  // NOLINT
  SuiteDefault(std::string c, std::string q, std::string f)
      : ci(std::move(c)), quick(std::move(q)), full(std::move(f)) {}
  /// The default of `suite` (burnin takes full's).
  const std::string& of(const std::string& suite) const;
};

/// One declared knob.
struct KnobSpec {
  std::string name;  ///< the KEY of --set ID.KEY
  KnobType type = KnobType::text;
  SuiteDefault def;
  std::string unit;                  ///< a unit ("B", "s", "count", ...) or "" for words
  std::string help;                  ///< one line
  std::vector<std::string> allowed;  ///< choice / choices: the values that may be given
};

/// What knobs belong to: a benchmark (core/api/benchmark.hpp), named by its id.
class KnobOwner {
 public:
  virtual ~KnobOwner() = default;
  virtual std::string id() const = 0;  ///< "area.name"
};

/// The typed handle of a declared knob of a benchmark. T is double (number), long long
/// (integer, size), std::string (text, choice) or std::vector<std::string> (list, choices).
template <class T>
class Knob {
 public:
  Knob(const KnobOwner* owner, const KnobSpec* spec) : owner_(owner), spec_(spec) {}
  /// The value --set gave (for the benchmark or its area), else the suite's default, parsed and
  /// checked against the knob's type and allowed values. Throws InputError naming
  /// `--set ID.KEY`, the text and what was expected. An unset knob with an empty default gives
  /// T{} (check given() first where the benchmark chooses at run time).
  T operator()(const Settings& s) const;
  /// Whether --set gave this knob.
  bool given(const Settings& s) const { return s.has(owner_->id(), spec_->name); }
  const KnobSpec& spec() const { return *spec_; }

 private:
  const KnobOwner* owner_;
  const KnobSpec* spec_;
};

extern template class Knob<double>;
extern template class Knob<long long>;
extern template class Knob<std::string>;
extern template class Knob<std::vector<std::string>>;

/// The knobs of one benchmark, in declaration order. Holds each spec at a fixed address, so the
/// handles stay valid for the benchmark's life.
class KnobSet {
 public:
  explicit KnobSet(const KnobOwner* owner) : owner_(owner) {}
  KnobSet(const KnobSet&) = delete;
  KnobSet& operator=(const KnobSet&) = delete;
  ~KnobSet();

  Knob<double> number(std::string name, SuiteDefault def, std::string unit, std::string help);
  Knob<long long> integer(std::string name, SuiteDefault def, std::string unit, std::string help);
  Knob<long long> size(std::string name, SuiteDefault def, std::string help);
  Knob<std::string> text(std::string name, SuiteDefault def, std::string help);
  Knob<std::vector<std::string>> list(std::string name, SuiteDefault def, std::string help);
  /// One of `allowed`; the default is `def`, or the first allowed value when `def` is empty.
  Knob<std::string> choice(std::string name, std::vector<std::string> allowed, std::string help,
                           SuiteDefault def = {});
  /// Items of `allowed`; the default is `def`, or every allowed value when `def` is empty.
  Knob<std::vector<std::string>> choices(std::string name, std::vector<std::string> allowed,
                                         std::string help, SuiteDefault def = {});

  std::vector<const KnobSpec*> specs() const;
  const KnobSpec* find(const std::string& name) const;

 private:
  const KnobSpec* add(KnobSpec spec);
  const KnobOwner* owner_;
  std::vector<KnobSpec*> specs_;
};

/// Parses the value `s` gives knob `spec` of `owner` (or its suite default) as its type asks, so
/// that a bad --set value is exit 2 when the run is planned, not a failed case later. Throws
/// InputError as Knob<T>::operator() does.
void check_knob(const KnobOwner& owner, const KnobSpec& spec, const Settings& s);

/// The text `clusterbench list` shows for a knob: "--set ID.KEY=DEFAULT  (type[, unit]) help",
/// DEFAULT as "ci/quick/full" when the suites differ.
std::string describe_knob(const std::string& bench_id, const KnobSpec& k);

}  // namespace clusterbench
