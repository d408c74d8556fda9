// Typed knobs (knobs.hpp).
#include "core/api/knobs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace clusterbench {

const char* knob_type_name(KnobType t) {
  switch (t) {
    case KnobType::number:
      return "number";
    case KnobType::integer:
      return "integer";
    case KnobType::size:
      return "size";
    case KnobType::text:
      return "text";
    case KnobType::list:
      return "list";
    case KnobType::choice:
      return "choice";
    case KnobType::choices:
      return "choices";
  }
  return "?";
}

const std::string& SuiteDefault::of(const std::string& suite) const {
  return suite == "ci" ? ci : suite == "quick" ? quick : full;
}

namespace {

std::string joined(const std::vector<std::string>& xs, const std::string& sep = ", ") {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : sep) + x;
  return out;
}

[[noreturn]] void bad(const std::string& what, const std::string& text, const std::string& want) {
  throw InputError(what + ": '" + text + "' " + want);
}

double parse_number(const std::string& what, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    if (decimal_start(text)) v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v)) bad(what, text, "is not a number");
  return v;
}

long long parse_integer(const std::string& what, const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) bad(what, text, "is not a whole number");
  return v;
}

void check_allowed(const std::string& what, const std::string& item,
                   const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), item) == allowed.end())
    throw InputError(what + ": unknown value '" + item + "' (" + joined(allowed) + ")");
}

template <class T>
T parse_as(const KnobSpec& k, const std::string& what, const std::string& text);

// No knob takes a negative number: counts, sizes, seconds and ratios are all >= 0.
template <>
double parse_as<double>(const KnobSpec&, const std::string& what, const std::string& text) {
  const double v = parse_number(what, text);
  if (v < 0) bad(what, text, "must not be negative");
  return v;
}

template <>
long long parse_as<long long>(const KnobSpec& k, const std::string& what, const std::string& text) {
  const long long v = k.type == KnobType::size ? parse_size(text, what) : parse_integer(what, text);
  if (v < 0) bad(what, text, "must not be negative");
  return v;
}

template <>
std::string parse_as<std::string>(const KnobSpec& k, const std::string& what,
                                  const std::string& text) {
  if (k.type == KnobType::choice) check_allowed(what, text, k.allowed);
  return text;
}

template <>
std::vector<std::string> parse_as<std::vector<std::string>>(const KnobSpec& k,
                                                            const std::string& what,
                                                            const std::string& text) {
  std::vector<std::string> items = split_list(text);
  if (items.empty()) bad(what, text, "names nothing: give at least one item");
  if (k.type == KnobType::choices)
    for (const auto& item : items) check_allowed(what, item, k.allowed);
  return items;
}

}  // namespace

template <class T>
T Knob<T>::operator()(const Settings& s) const {
  const std::string id = owner_->id();
  const std::string what = "--set " + s.given_key(id, spec_->name);
  if (s.has(id, spec_->name)) return parse_as<T>(*spec_, what, s.get(id, spec_->name, ""));
  const std::string& def = spec_->def.of(s.suite());
  if (def.empty()) return T{};
  return parse_as<T>(*spec_, "the default of " + what, def);
}

template class Knob<double>;
template class Knob<long long>;
template class Knob<std::string>;
template class Knob<std::vector<std::string>>;

KnobSet::~KnobSet() {
  for (KnobSpec* k : specs_) delete k;
}

const KnobSpec* KnobSet::add(KnobSpec spec) {
  specs_.push_back(new KnobSpec(std::move(spec)));
  return specs_.back();
}

Knob<double> KnobSet::number(std::string name, SuiteDefault def, std::string unit,
                             std::string help) {
  return {owner_, add({std::move(name),
                       KnobType::number,
                       std::move(def),
                       std::move(unit),
                       std::move(help),
                       {}})};
}

Knob<long long> KnobSet::integer(std::string name, SuiteDefault def, std::string unit,
                                 std::string help) {
  return {owner_, add({std::move(name),
                       KnobType::integer,
                       std::move(def),
                       std::move(unit),
                       std::move(help),
                       {}})};
}

Knob<long long> KnobSet::size(std::string name, SuiteDefault def, std::string help) {
  return {owner_, add({std::move(name), KnobType::size, std::move(def), "B", std::move(help), {}})};
}

Knob<std::string> KnobSet::text(std::string name, SuiteDefault def, std::string help) {
  return {owner_, add({std::move(name), KnobType::text, std::move(def), "", std::move(help), {}})};
}

Knob<std::vector<std::string>> KnobSet::list(std::string name, SuiteDefault def, std::string help) {
  return {owner_, add({std::move(name), KnobType::list, std::move(def), "", std::move(help), {}})};
}

Knob<std::string> KnobSet::choice(std::string name, std::vector<std::string> allowed,
                                  std::string help, SuiteDefault def) {
  if (def.ci.empty() && def.quick.empty() && def.full.empty()) def = SuiteDefault(allowed.at(0));
  return {owner_, add({std::move(name), KnobType::choice, std::move(def), "", std::move(help),
                       std::move(allowed)})};
}

Knob<std::vector<std::string>> KnobSet::choices(std::string name, std::vector<std::string> allowed,
                                                std::string help, SuiteDefault def) {
  if (def.ci.empty() && def.quick.empty() && def.full.empty())
    def = SuiteDefault(joined(allowed, ","));
  return {owner_, add({std::move(name), KnobType::choices, std::move(def), "", std::move(help),
                       std::move(allowed)})};
}

std::vector<const KnobSpec*> KnobSet::specs() const { return {specs_.begin(), specs_.end()}; }

const KnobSpec* KnobSet::find(const std::string& name) const {
  for (const KnobSpec* k : specs_)
    if (k->name == name) return k;
  return nullptr;
}

void check_knob(const KnobOwner& owner, const KnobSpec& spec, const Settings& s) {
  switch (spec.type) {
    case KnobType::number:
      Knob<double>(&owner, &spec)(s);
      break;
    case KnobType::integer:
    case KnobType::size:
      Knob<long long>(&owner, &spec)(s);
      break;
    case KnobType::text:
    case KnobType::choice:
      Knob<std::string>(&owner, &spec)(s);
      break;
    case KnobType::list:
    case KnobType::choices:
      Knob<std::vector<std::string>>(&owner, &spec)(s);
      break;
  }
}

std::string describe_knob(const std::string& bench_id, const KnobSpec& k) {
  const SuiteDefault& d = k.def;
  std::string def =
      d.ci == d.quick && d.quick == d.full ? d.ci : d.ci + "/" + d.quick + "/" + d.full;
  std::string out = "--set " + bench_id + "." + k.name + "=" + (def.empty() ? "..." : def) + "  (" +
                    knob_type_name(k.type);
  if (!k.unit.empty()) out += ", " + k.unit;
  if (!k.allowed.empty()) out += ": " + joined(k.allowed);
  out += ") " + k.help;
  return out;
}

}  // namespace clusterbench
