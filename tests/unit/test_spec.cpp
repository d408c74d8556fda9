// Spec tables: loading, `extends`, validation errors, env pointers (bench/records/spec.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "records/spec.hpp"

namespace clusterbench {
namespace {

const std::string kSpecs = std::string(CB_FIXTURES) + "/specs/";

/// Message of the InputError that `f` throws; fails the test when it throws none.
template <typename F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InputError";
  return "";
}

std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "cb_spec_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// A valid row; tests break one field at a time.
json good_row() {
  return {{"id", "host.cpu.cores"},
          {"title", "CPU physical cores"},
          {"source", "seed guide"},
          {"severity", "fail"},
          {"select", {{"env", "/cpu/physical_cores"}}},
          {"scope", "node"},
          {"aggregate", "each"},
          {"op", ">="},
          {"value", 64},
          {"unit", "count"}};
}

std::string write_spec(const std::string& name, const json& rows) {
  std::string path = temp_dir(name) + "/" + name + ".json";
  std::ofstream(path)
      << json({{"schema", "clusterbench.spec/1"}, {"name", name}, {"requirements", rows}}).dump(2);
  return path;
}

std::string row_error(const std::string& name, const json& row) {
  std::string path = write_spec(name, json::array({row}));
  return input_error([&] { load_spec(path); });
}

TEST(LoadSpec, HostBaseRows) {
  Spec s = load_spec(kSpecs + "host-base.json");
  EXPECT_EQ(s.name, "host-base");
  EXPECT_EQ(s.schema, "clusterbench.spec/1");
  EXPECT_FALSE(s.has_match);
  ASSERT_EQ(s.requirements.size(), 6u);
  const Requirement& mem = s.requirements[1];
  EXPECT_EQ(mem.id, "host.memory.installed");
  EXPECT_EQ(mem.select.env, "/memory/installed_gib");
  EXPECT_EQ(mem.scope, "node");
  EXPECT_EQ(mem.aggregate, "each");
  EXPECT_EQ(mem.op, ">=");
  EXPECT_DOUBLE_EQ(mem.value.get<double>(), 476.8);
  EXPECT_EQ(mem.unit, "GiB");
  EXPECT_EQ(s.requirements[4].value, "performance");
  EXPECT_EQ(s.requirements[4].severity, "warn");
}

// A typo in a field name, or a key given twice, is named; it is never quietly ignored.
TEST(LoadSpec, UnknownFieldsAndDuplicateKeysAreNamed) {
  json row = good_row();
  row["vaule"] = 64;
  EXPECT_NE(row_error("unk_row", row).find("requirement 'host.cpu.cores': unknown field 'vaule'"),
            std::string::npos);
  row = good_row();
  row["select"]["evn"] = "/x";
  EXPECT_NE(row_error("unk_sel", row)
                .find("requirement 'host.cpu.cores': select (an env row): unknown field 'evn'"),
            std::string::npos);
  row = good_row();
  row["$comment"] = "a note for people";
  std::string ok = write_spec("comment", json::array({row}));
  EXPECT_EQ(load_spec(ok).requirements.at(0).value, 64);

  std::string dir = temp_dir("top");
  std::ofstream(dir + "/t.json") << json({{"schema", "clusterbench.spec/1"},
                                          {"name", "t"},
                                          {"requirement", json::array()},
                                          {"requirements", json::array()}})
                                        .dump();
  EXPECT_NE(input_error([&] { load_spec(dir + "/t.json"); }).find("unknown field 'requirement'"),
            std::string::npos);
  std::ofstream(dir + "/m.json") << R"({"schema": "clusterbench.spec/1", "name": "m",
    "match": {"gpu_cnt": 8}, "requirements": []})";
  EXPECT_NE(input_error([&] { load_spec(dir + "/m.json"); }).find("match: unknown field 'gpu_cnt'"),
            std::string::npos);

  // The second "value" would win in a JSON reader; the table is refused, naming the object.
  std::string dup = good_row().dump();
  dup.insert(dup.rfind('}'), R"(, "value": 8)");
  std::ofstream(dir + "/d.json") << R"({"schema": "clusterbench.spec/1", "name": "d",
    "requirements": [)" + good_row().dump() +
                                        "," + dup + "]}";
  EXPECT_EQ(input_error([&] { load_spec(dir + "/d.json"); }),
            dir +
                "/d.json: /requirements/1: key 'value' appears twice in one object (a reader "
                "keeps one)");
  std::ofstream(dir + "/n.json") << R"({"schema": "clusterbench.spec/1", "name": "n",
    "requirements": [], "name": "n2"})";
  EXPECT_EQ(input_error([&] { load_spec(dir + "/n.json"); }),
            dir + "/n.json: /: key 'name' appears twice in one object (a reader keeps one)");
  // fio's own output repeats keys: only spec tables are held to this.
  std::ofstream(dir + "/s.json") << R"({"schema": "clusterbench.spec/1", "name": "s",
    "requirements": [{"id": "a", "select": {"benchmark": "b", "metric": "m", "metric": "m"}}]})";
  EXPECT_NE(input_error([&] {
              load_spec(dir + "/s.json");
            }).find("/requirements/0/select: key 'metric' appears twice"),
            std::string::npos);
  // A key holding '/' or '~' is escaped in the pointer (RFC 6901).
  std::ofstream(dir + "/p.json") << R"({"schema": "clusterbench.spec/1", "name": "p", "x/~y":
    {"a": 1, "a": 2}, "requirements": []})";
  EXPECT_NE(input_error([&] { load_spec(dir + "/p.json"); }).find("/x~1~0y: key 'a' appears twice"),
            std::string::npos);
}

// What the loader would otherwise let pass unseen: a parent's bad field (named with the table
// that extends it), an unknown field in a removing row, a select field of another kind of row,
// and a key whose characters would cut or colour the message.
TEST(LoadSpec, FieldsNoRowWouldApplyAreNamed) {
  std::string dir = temp_dir("kinds");
  std::ofstream(dir + "/p.json") << json({{"schema", "clusterbench.spec/1"},
                                          {"name", "p"},
                                          {"requirments", json::array()},
                                          {"requirements", json::array({good_row()})}})
                                        .dump();
  std::ofstream(dir + "/c.json") << R"({"schema": "clusterbench.spec/1", "name": "c",
    "extends": "p.json", "requirements": []})";
  EXPECT_EQ(input_error([&] { load_spec(dir + "/c.json"); }),
            dir + "/p.json: unknown field 'requirments' (extended by " + dir + "/c.json)");

  std::ofstream(dir + "/p2.json") << json({{"schema", "clusterbench.spec/1"},
                                           {"name", "p2"},
                                           {"requirements", json::array({good_row()})}})
                                         .dump();
  std::ofstream(dir + "/r.json") << R"({"schema": "clusterbench.spec/1", "name": "r",
    "extends": "p2.json", "requirements": [{"id": "host.cpu.cores", "remove": true, "vaule": 1}]})";
  EXPECT_NE(input_error([&] {
              load_spec(dir + "/r.json");
            }).find("requirement 'host.cpu.cores': unknown field 'vaule'"),
            std::string::npos);
  std::ofstream(dir + "/r2.json") << R"({"schema": "clusterbench.spec/1", "name": "r2",
    "extends": "p2.json", "requirements": [{"id": "host.cpu.cores", "remove": true}]})";
  EXPECT_TRUE(load_spec(dir + "/r2.json").requirements.empty());

  json rec = good_row();
  rec["select"] = {
      {"benchmark", "compute.memory_bandwidth"}, {"metric", "bandwidth"}, {"where", {{"/x", 1}}}};
  rec["unit"] = "GB/s";
  EXPECT_NE(row_error("where_rec", rec).find("select: unknown field 'where'"), std::string::npos);
  json env = good_row();
  env["select"]["params"] = {{"kernel", "triad"}};
  EXPECT_NE(row_error("params_env", env).find("field 'select.params' is for records rows"),
            std::string::npos);
  json ctl = good_row();
  ctl[std::string("a\0b\x1b", 4)] = 1;
  EXPECT_NE(row_error("ctl", ctl).find(R"(unknown field 'a\u0000b\u001b')"), std::string::npos)
      << row_error("ctl", ctl);
}

TEST(LoadSpec, ExtendsOverridesById) {
  Spec s = load_spec(kSpecs + "cpu-node.json");
  EXPECT_EQ(s.name, "cpu-node");
  EXPECT_EQ(s.path, kSpecs + "cpu-node.json");
  EXPECT_EQ(s.extends_chain,
            (std::vector<std::string>{kSpecs + "host-base.json", kSpecs + "cpu-node.json"}));
  EXPECT_TRUE(s.has_match);
  EXPECT_TRUE(s.match.no_gpu);
  ASSERT_EQ(s.requirements.size(), 7u);
  // Overridden in place: same position, the child's fields.
  EXPECT_EQ(s.requirements[0].id, "host.cpu.cores");
  EXPECT_EQ(s.requirements[0].severity, "warn");
  EXPECT_EQ(s.requirements[0].value, 32);
  EXPECT_EQ(s.requirements[6].id, "compute.membw.triad");
  EXPECT_EQ(s.requirements[6].select.benchmark, "compute.memory_bandwidth");
  EXPECT_EQ(s.requirements[6].select.params, json({{"kernel", "triad"}}));
  EXPECT_EQ(s.requirements[6].select.metric, "bandwidth");
  EXPECT_TRUE(s.requirements[6].select.env.empty());
}

TEST(LoadSpec, TwoLevelsOfExtendsWithRemove) {
  Spec s = load_spec(kSpecs + "cpu-strict.json");
  ASSERT_EQ(s.extends_chain.size(), 3u);
  EXPECT_EQ(s.extends_chain[0], kSpecs + "host-base.json");
  std::vector<std::string> ids;
  for (const auto& r : s.requirements) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"host.cpu.cores", "host.memory.installed",
                                           "host.nvme.capacity", "host.tuning.governor",
                                           "compute.membw.triad"}));
  EXPECT_EQ(s.requirements[4].aggregate, "each");
  EXPECT_EQ(s.requirements[4].value, 300);
  // Inherited through cpu-node.json.
  EXPECT_TRUE(s.has_match);
  EXPECT_TRUE(s.match.no_gpu);
}

TEST(LoadSpec, GpuTableMatch) {
  Spec s = load_spec(kSpecs + "h100-sxm-80g-8x.json");
  EXPECT_EQ(s.match.gpu_name, "H100.*HBM3");
  EXPECT_EQ(s.match.gpu_count, 8);
  EXPECT_EQ(s.match.pci_device_ids, (std::vector<std::string>{"0x2330"}));
  EXPECT_EQ(s.requirements.size(), 13u);
}

TEST(LoadSpec, MalformedJsonNamesFileAndLine) {
  std::string m = input_error([] { load_spec(kSpecs + "malformed.json"); });
  EXPECT_NE(m.find("malformed.json"), std::string::npos) << m;
  EXPECT_NE(m.find("line 5"), std::string::npos) << m;
}

TEST(LoadSpec, UnknownEnvPointerIsAnError) {
  std::string m = input_error([] { load_spec(kSpecs + "bad-env-pointer.json"); });
  EXPECT_NE(m.find("bad-env-pointer.json"), std::string::npos) << m;
  EXPECT_NE(m.find("requirement 'gpu.clock'"), std::string::npos) << m;
  EXPECT_NE(m.find("field 'select.env'"), std::string::npos) << m;
  EXPECT_NE(m.find("'/gpus/*/frobnicate' is not a known env field"), std::string::npos) << m;
}

TEST(LoadSpec, ExtendsCycleIsAnError) {
  std::string m = input_error([] { load_spec(kSpecs + "cycle-a.json"); });
  EXPECT_NE(m.find("'extends' forms a cycle"), std::string::npos) << m;
}

// `extends` may name several tables, merged in order (the health rows are one table that the
// node tables and the GPU burn-in both extend): a later parent's row replaces an earlier one's
// of the same id, the child's own rows come last, and two parents may share an ancestor.
TEST(LoadSpec, ExtendsSeveralTablesInOrder) {
  const std::string dir = temp_dir("multi");
  auto table = [&](const std::string& name, const json& extends, const json& rows) {
    json t = {{"schema", "clusterbench.spec/5"}, {"name", name}, {"requirements", rows}};
    if (!extends.is_null()) t["extends"] = extends;
    std::ofstream(dir + "/" + name + ".json") << t.dump(2);
  };
  json r = good_row();
  auto row = [&](const std::string& id, int value) {
    json x = r;
    x["id"] = id, x["value"] = value;
    return x;
  };
  table("root", nullptr, json::array({row("a", 1)}));
  table("left", "root.json", json::array({row("b", 2), row("c", 3)}));
  table("right", "root.json", json::array({row("c", 30), row("d", 4)}));
  table("child", json::array({"left.json", "right.json"}), json::array({row("e", 5)}));
  Spec s = load_spec(dir + "/child.json");
  std::vector<std::string> ids;
  for (const auto& q : s.requirements) ids.push_back(q.id + "=" + q.value.dump());
  EXPECT_EQ(ids, (std::vector<std::string>{"a=1", "b=2", "c=30", "d=4", "e=5"}));
  EXPECT_EQ(s.extends_chain.size(), 4u);  // root, left, right, child: root once
  table("bad", json::array(), json::array());
  EXPECT_NE(input_error([&] {
              load_spec(dir + "/bad.json");
            }).find("'extends' must be a file name or a non-empty array"),
            std::string::npos);
  table("loop", json::array({"left.json", "loop.json"}), json::array());
  EXPECT_NE(input_error([&] { load_spec(dir + "/loop.json"); }).find("forms a cycle"),
            std::string::npos);
}

TEST(LoadSpec, MissingFileAndMissingParent) {
  EXPECT_NE(
      input_error([] { load_spec(kSpecs + "no-such.json"); }).find("no-such.json: cannot open"),
      std::string::npos);
  std::string path = temp_dir("orphan") + "/orphan.json";
  std::ofstream(path) << R"({"schema": "clusterbench.spec/1", "name": "orphan",
                             "extends": "gone.json", "requirements": []})";
  EXPECT_NE(input_error([&] { load_spec(path); }).find("gone.json: cannot open"),
            std::string::npos);
}

// A row's remedy (spec/5) is kept for the first page; an older table naming one is refused, and
// the seed's rows all carry one.
TEST(LoadSpec, RemedyNeedsSchema5) {
  const std::string dir = temp_dir("remedy");
  auto table = [&](const std::string& schema) {
    std::ofstream(dir + "/r.json") << R"({"schema": ")" << schema << R"(", "name": "r",
      "requirements": [{"id": "a", "title": "t", "source": "s", "remedy": "reseat the riser",
        "severity": "fail", "select": {"env": "/cpu/physical_cores"}, "scope": "node",
        "aggregate": "each", "op": ">=", "value": 1, "unit": "count"}]})";
    return dir + "/r.json";
  };
  EXPECT_EQ(load_spec(table("clusterbench.spec/5")).requirements.at(0).remedy, "reseat the riser");
  std::ofstream(dir + "/blank.json") << R"({"schema": "clusterbench.spec/5", "name": "b",
      "requirements": [{"id": "a", "title": "t", "source": "s", "remedy": "  \n ",
        "severity": "fail", "select": {"env": "/cpu/physical_cores"}, "scope": "node",
        "aggregate": "each", "op": ">=", "value": 1, "unit": "count"}]})";
  EXPECT_NE(input_error([&] {
              load_spec(dir + "/blank.json");
            }).find("blank.json: requirements[0]: requirement 'a': field 'remedy' is blank"),
            std::string::npos);
  EXPECT_NE(input_error([&] { load_spec(table("clusterbench.spec/4")); })
                .find("r.json: requirements[0]: requirement 'a': field 'remedy' needs schema "
                      "clusterbench.spec/5, not clusterbench.spec/4"),
            std::string::npos);
  for (const char* name : {"cpu-node.json", "h100-sxm-80g-8x.json", "burnin-gpu.json"})
    for (const auto& q :
         load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/" + name).requirements)
      EXPECT_FALSE(q.remedy.empty()) << name << ": " << q.id;
}

TEST(LoadSpec, WrongSchemaIsAnError) {
  std::string path = temp_dir("schema") + "/s.json";
  std::ofstream(path) << R"({"schema": "clusterbench.spec/6", "name": "s", "requirements": []})";
  EXPECT_NE(input_error([&] { load_spec(path); })
                .find("field 'schema' is 'clusterbench.spec/6', expected clusterbench.spec/5 (or "
                      "clusterbench.spec/4, clusterbench.spec/3, clusterbench.spec/2, "
                      "clusterbench.spec/1)"),
            std::string::npos);
}

// --- families (clusterbench.spec/2) ------------------------------------------------------------

/// A spec/2 table with `families`, extending `parent` when given.
std::string write_families(const std::string& name, const json& families,
                           const std::string& parent = "",
                           const std::string& schema = "clusterbench.spec/2") {
  std::string path = temp_dir(name) + "/" + name + ".json";
  json doc = {{"schema", schema}, {"name", name}, {"requirements", json::array()}};
  if (!families.is_null()) doc["families"] = families;
  if (!parent.empty()) doc["extends"] = parent;
  std::ofstream(path) << doc.dump(2);
  return path;
}

TEST(Families, ParsedWithDefaults) {
  json fams = json::parse(R"([
    {"benchmark": "compute.gemm", "outlier_tolerance": 0.05,
     "prometheus": [{"metric": "tflops", "name": "g_tflops", "unit": "TFLOP/s", "help": "h"},
                    {"metric": "bw", "name": "g_bytes", "unit": "GB/s", "scale": 1e9, "help": "b"}]},
    {"benchmark": "collectives.*",
     "chart": {"x": "bytes", "logx": true, "metric": "busbw", "title": "t"}},
    {"benchmark": "burnin.soak", "series": "soak"},
    {"benchmark": "io.fio", "chart": {"kind": "groups", "x": "profile", "metric": "*_bw",
     "scope": "node", "split": ["backend", "path"], "logy": true, "mark_x": 8,
     "mark_label": "m", "title": "f"}}])");
  Spec s = load_spec(write_families("fams", fams));
  EXPECT_EQ(s.schema, "clusterbench.spec/2");
  ASSERT_EQ(s.families.size(), 4u);
  EXPECT_EQ(s.families[0].benchmark, "compute.gemm");
  EXPECT_EQ(s.families[0].outlier_tolerance, 0.05);
  ASSERT_TRUE(s.families[0].prometheus);
  ASSERT_EQ(s.families[0].prometheus->size(), 2u);
  EXPECT_EQ((*s.families[0].prometheus)[0].scale, 1);
  EXPECT_EQ((*s.families[0].prometheus)[1].scale, 1e9);
  EXPECT_FALSE(s.families[0].chart);
  ASSERT_TRUE(s.families[1].chart);
  EXPECT_EQ(s.families[1].chart->x, "bytes");
  EXPECT_TRUE(s.families[1].chart->logx);
  EXPECT_EQ(s.families[1].chart->series, "benchmark");
  EXPECT_EQ(s.families[1].chart->xlabel, "bytes");  // defaults to the param
  EXPECT_FALSE(s.families[1].outlier_tolerance);
  EXPECT_EQ(s.families[2].series, "soak");
  EXPECT_EQ(s.families[1].chart->kind, "lines");  // the default
  EXPECT_FALSE(s.families[1].chart->logy);
  const FamilyChart& fio = *s.families[3].chart;
  EXPECT_EQ(fio.kind, "groups");
  EXPECT_EQ(fio.metric, "*_bw");
  EXPECT_EQ(fio.scope, "node");
  EXPECT_EQ(fio.split, (std::vector<std::string>{"backend", "path"}));
  EXPECT_TRUE(fio.logy);
  ASSERT_TRUE(fio.mark_x);
  EXPECT_EQ(*fio.mark_x, 8.0);
  EXPECT_EQ(fio.mark_label, "m");
}

// A child's family with the same glob overrides, in place, the fields it sets; new ones are
// appended.
TEST(Families, InheritedThroughExtendsAndReplacedByGlob) {
  std::string parent = write_families(
      "fam_parent",
      json::parse(R"([{"benchmark": "a.*", "outlier_tolerance": 0.1, "series": "soak"},
                      {"benchmark": "b.x", "outlier_tolerance": 0.2}])"));
  Spec s = load_spec(write_families("fam_child",
                                    json::parse(R"([{"benchmark": "c.y", "outlier_tolerance": 0.3},
                                   {"benchmark": "a.*", "outlier_tolerance": 0.05,
                                    "compare": [{"metric": "*", "tolerance": 0.3}]}])"),
                                    parent, "clusterbench.spec/3"));
  ASSERT_EQ(s.families.size(), 3u);
  EXPECT_EQ(s.families[0].benchmark, "a.*");
  EXPECT_EQ(s.families[0].outlier_tolerance, 0.05);
  EXPECT_EQ(s.families[0].series, "soak");  // kept: the child does not set it
  ASSERT_EQ(s.families[0].compare.size(), 1u);
  EXPECT_DOUBLE_EQ(s.families[0].compare[0].tolerance, 0.3);
  EXPECT_EQ(s.families[1].benchmark, "b.x");
  EXPECT_EQ(s.families[2].benchmark, "c.y");
  // A spec/1 child declares none but inherits its parent's.
  Spec v1 = load_spec(write_families("fam_v1", nullptr, parent, "clusterbench.spec/1"));
  EXPECT_EQ(v1.schema, "clusterbench.spec/1");
  EXPECT_EQ(v1.families.size(), 2u);
}

TEST(Families, EachBadFieldIsNamed) {
  auto error = [](const std::string& name, const std::string& fams,
                  const std::string& schema = "clusterbench.spec/2") {
    std::string path = write_families(name, json::parse(fams), "", schema);
    return input_error([&] { load_spec(path); });
  };
  EXPECT_NE(error("f1", R"([{"benchmark": "a"}])", "clusterbench.spec/1")
                .find("field 'families' needs schema clusterbench.spec/2"),
            std::string::npos);
  EXPECT_NE(error("f2", R"([{"benchmark": "a", "tolerance": 1}])")
                .find("families[0] ('a'): unknown field 'tolerance'"),
            std::string::npos);
  EXPECT_NE(error("f3", R"([{"benchmark": "a", "outlier_tolerance": -1}])")
                .find("field 'outlier_tolerance' must be >= 0"),
            std::string::npos);
  EXPECT_NE(error("f4", R"([{"benchmark": "a", "prometheus": [{"metric": "m", "name": "9x",
                                "unit": "W", "help": "h"}]}])")
                .find("prometheus[0]: field 'name' '9x' is not a Prometheus metric name"),
            std::string::npos);
  EXPECT_NE(error("f5", R"([{"benchmark": "a", "prometheus": [{"metric": "m", "name": "x",
                                "unit": "watts", "help": "h"}]}])")
                .find("field 'unit' 'watts' is not a known unit"),
            std::string::npos);
  EXPECT_NE(error("f6", R"([{"benchmark": "a", "chart": {"x": "bytes", "title": "t",
                                "series": "host"}}])")
                .find("chart: field 'series' is 'host', expected benchmark or item"),
            std::string::npos);
  EXPECT_NE(error("f6b", R"([{"benchmark": "a", "chart": {"x": "p", "title": "t",
                                "kind": "pie"}}])")
                .find("chart: field 'kind' is 'pie', expected lines or groups"),
            std::string::npos);
  EXPECT_NE(error("f6c", R"([{"benchmark": "a", "chart": {"x": "p", "title": "t",
                                "scope": "rack"}}])")
                .find("field 'scope' is 'rack', expected node, gpu, cluster or link"),
            std::string::npos);
  EXPECT_NE(error("f6d", R"([{"benchmark": "a", "chart": {"x": "p", "title": "t",
                                "split": "backend"}}])")
                .find("field 'split' must be an array of param names"),
            std::string::npos);
  EXPECT_NE(error("f6e", R"([{"benchmark": "a", "chart": {"x": "p", "title": "t"}}])")
                .find("a lines chart needs 'metric' or 'unit' (one quantity per axis)"),
            std::string::npos);
  EXPECT_NE(error("f6f", R"([{"benchmark": "a", "chart": {"x": "p", "title": "t",
                                "metric": "*"}}])")
                .find("field 'metric' '*' is a glob: give 'unit' too"),
            std::string::npos);
  EXPECT_NE(error("f7", R"([{"benchmark": "a", "series": "time"}])")
                .find("field 'series' is 'time', expected soak"),
            std::string::npos);
  EXPECT_NE(error("f8", R"([{"benchmark": "a"}, {"benchmark": "a"}])")
                .find("families[1]: benchmark 'a' appears twice in this table"),
            std::string::npos);
  EXPECT_NE(
      error("f9", R"([{"outlier_tolerance": 0.1}])").find("families[0]: missing field 'benchmark'"),
      std::string::npos);
}

// The shipped tables: the seed families live in base.json (every GPU and CPU table inherits
// them), the soak family in burnin-cpu.json (burnin-gpu.json inherits it).
TEST(Families, ShippedTables) {
  const std::string dir = std::string(CB_SOURCE_DIR) + "/reports/specs/";
  for (const char* table :
       {"cpu-node.json", "h100-sxm-80g-8x.json", "a100-sxm-80g-8x.json", "h200-sxm-141g-8x.json"}) {
    Spec s = load_spec(dir + table);
    EXPECT_GE(s.families.size(), 8u) << table;
    EXPECT_EQ(s.families.front().benchmark, "compute.gemm") << table;
  }
  Spec gpu = load_spec(dir + "burnin-gpu.json");
  ASSERT_EQ(gpu.families.size(), 1u);
  EXPECT_EQ(gpu.families[0].series, "soak");
}

TEST(ValidateRow, GoodRowLoads) {
  Spec s = load_spec(write_spec("good", json::array({good_row()})));
  ASSERT_EQ(s.requirements.size(), 1u);
  EXPECT_EQ(s.requirements[0].value, 64);
}

TEST(ValidateRow, EachBadFieldIsNamed) {
  struct Case {
    std::string field;
    json value;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"severity", "fatal", "field 'severity' is 'fatal', expected fail or warn"},
      {"scope", "rack", "field 'scope' is 'rack'"},
      {"aggregate", "mean", "field 'aggregate' is 'mean'"},
      {"op", ">", "field 'op' is '>'"},
      {"unit", "MB/s", "field 'unit' 'MB/s' is not a known unit"},
      {"unit", "GiB", "field 'unit' is 'GiB' but /cpu/physical_cores is in 'count'"},
      {"source", "", "field 'source' is empty"},
      {"value", "64", "field 'value' must be a number for op '>='"},
  };
  for (const auto& c : cases) {
    json r = good_row();
    r[c.field] = c.value;
    std::string m = row_error("bad_" + c.field, r);
    EXPECT_NE(m.find("requirement 'host.cpu.cores'"), std::string::npos) << m;
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.field << ": " << m;
  }
  json no_title = good_row();
  no_title.erase("title");
  EXPECT_NE(row_error("no_title", no_title).find("missing field 'title'"), std::string::npos);
}

// Issue 44, item 9: a threshold per NIC is the table's nics_per_node of it (the network alert:
// 12.5 GB/s per 200 Gb/s NIC); without nics_per_node it cannot be known.
TEST(ValidateRow, APerNicThresholdTimesTheTablesNics) {
  json row = good_row();
  row["value"] = {{"per_nic", 12.5}};
  const std::string dir = temp_dir("per_nic");
  auto table = [&](const json& extra) {
    json doc = {{"schema", kSpecSchema}, {"name", "t"}, {"requirements", json::array({row})}};
    doc.update(extra);
    std::ofstream(dir + "/t.json") << doc.dump();
    return dir + "/t.json";
  };
  Spec s = load_spec(table({{"nics_per_node", 4}}));
  EXPECT_EQ(s.requirements[0].value, 50);
  EXPECT_EQ(s.requirements[0].per_nic.value_or(0), 12.5);
  EXPECT_EQ(*s.nics_per_node, 4);
  EXPECT_NE(input_error([&] { load_spec(table(json::object())); }).find("sets no nics_per_node"),
            std::string::npos);
  EXPECT_NE(input_error([&] {
              load_spec(table({{"nics_per_node", 0}}));
            }).find("'nics_per_node' must be an integer from 1 to 64"),
            std::string::npos);
  row["value"] = {{"per_nic", -1}};
  EXPECT_NE(input_error([&] {
              load_spec(table({{"nics_per_node", 8}}));
            }).find("{\"per_nic\": N} with N > 0"),
            std::string::npos);
  // The shipped alert row: 12.5 x 8 = 100 GB/s.
  Spec h100 = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/h100-sxm-80g-8x.json");
  for (const auto& q : h100.requirements)
    if (q.id == "collectives.network_busbw_alert") EXPECT_EQ(q.value, 100);
}

TEST(ValidateRow, OpsCheckTheirValues) {
  json in = good_row();
  in["op"] = "in";
  EXPECT_NE(row_error("in", in).find("must be an array for op 'in'"), std::string::npos);
  json re = good_row();
  re["select"] = {{"env", "/cpu/model"}};
  re["unit"] = "";
  re["op"] = "matches";
  re["value"] = "Xeon(";
  EXPECT_NE(row_error("regex", re).find("field 'value' is not a valid regex"), std::string::npos);
  re["value"] = "Xeon|EPYC";
  EXPECT_EQ(load_spec(write_spec("regex_ok", json::array({re}))).requirements[0].op, "matches");
}

TEST(ValidateRow, StringEnvFieldsHaveNoOrder) {
  json r = good_row();
  r["select"] = {{"env", "/tuning/governor"}};
  r["unit"] = "";
  r["aggregate"] = "max";
  r["op"] = "==";
  r["value"] = "performance";
  EXPECT_NE(row_error("strmax", r)
                .find("field 'aggregate' is 'max' but /tuning/governor is not a number"),
            std::string::npos);
  r["aggregate"] = "count";
  r["unit"] = "count";
  r["value"] = 1;
  EXPECT_EQ(load_spec(write_spec("strcount", json::array({r}))).requirements[0].aggregate, "count");
}

TEST(ValidateRow, CountNeedsCountUnit) {
  json r = good_row();
  r["select"] = {{"benchmark", "compute.gemm"}, {"metric", "throughput"}};
  r["aggregate"] = "count";
  r["unit"] = "TFLOP/s";
  EXPECT_NE(row_error("count", r).find("must be 'count' with aggregate 'count'"),
            std::string::npos);
}

TEST(ValidateRow, DuplicateIdInOneTableIsAnError) {
  std::string path = write_spec("dup", json::array({good_row(), good_row()}));
  std::string m = input_error([&] { load_spec(path); });
  EXPECT_NE(m.find("requirements[1]: requirement id 'host.cpu.cores' appears twice"),
            std::string::npos)
      << m;
}

TEST(ValidateRow, RemoveOfAnUnknownRowIsAnError) {
  std::string dir = temp_dir("rm");
  std::filesystem::copy_file(kSpecs + "host-base.json", dir + "/host-base.json");
  std::ofstream(dir + "/child.json") << R"({"schema": "clusterbench.spec/1", "name": "child",
      "extends": "host-base.json", "requirements": [{"id": "host.nope", "remove": true}]})";
  EXPECT_NE(input_error([&] {
              load_spec(dir + "/child.json");
            }).find("requirement 'host.nope' has 'remove' but no parent row has it"),
            std::string::npos);
  std::ofstream(dir + "/child2.json") << R"({"schema": "clusterbench.spec/1", "name": "child2",
      "extends": "host-base.json", "remove": ["host.nope"], "requirements": []})";
  EXPECT_NE(input_error([&] {
              load_spec(dir + "/child2.json");
            }).find("field 'remove' names 'host.nope', which no parent row has"),
            std::string::npos);
}

TEST(EnvFieldUnit, KnownAndUnknown) {
  EXPECT_EQ(env_field_unit("/cpu/physical_cores"), "count");
  EXPECT_EQ(env_field_unit("/memory/installed_gib"), "GiB");
  EXPECT_EQ(env_field_unit("/nics/*/rate_gbps"), "Gb/s");
  EXPECT_EQ(env_field_unit("/block_devices/*/capacity_tb"), "TB");
  EXPECT_EQ(env_field_unit("/gpus/*/ecc_mode"), "");
  EXPECT_THROW(env_field_unit("/gpus/*/frobnicate"), InputError);
  EXPECT_THROW(env_field_unit("/gpus/0/memory_gib"), InputError);  // tables use `*`
}

TEST(ExpandPointer, WildcardsOverArraysAndObjects) {
  json doc = {{"gpus",
               {{{"memory_gib", 79.6}, {"pcie", {{"width_current", 16}}}},
                {{"memory_gib", 79.6}, {"pcie", {{"width_current", 8}}}}}},
              {"environment", {{"NCCL_IB_DISABLE", "0"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}},
              {"cpu", {{"physical_cores", 112}}}};
  auto w = expand_pointer(doc, "/gpus/*/pcie/width_current");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].first, "/gpus/0/pcie/width_current");
  EXPECT_EQ(w[0].second, 16);
  EXPECT_EQ(w[1].first, "/gpus/1/pcie/width_current");
  EXPECT_EQ(w[1].second, 8);
  auto e = expand_pointer(doc, "/environment/*");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].first, "/environment/CUDA_VISIBLE_DEVICES");  // object keys sorted
  auto c = expand_pointer(doc, "/cpu/physical_cores");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].second, 112);
  EXPECT_EQ(expand_pointer(doc, "/gpus/1/memory_gib").at(0).second, 79.6);
  EXPECT_TRUE(expand_pointer(doc, "/gpus/2/memory_gib").empty());
  EXPECT_TRUE(expand_pointer(doc, "/nics/*/rate_gbps").empty());
  EXPECT_EQ(expand_pointer(doc, "/gpus/*").size(), 2u);
}

TEST(UnknownReason, NearestEnclosingUnknownMap) {
  json doc = {
      {"gpus",
       {{{"memory_gib", nullptr},
         {"pcie", {{"width_current", nullptr}}},
         {"unknown",
          {{"memory_gib", "NVML not loaded: Driver Not Loaded"},
           {"pcie/width_current", "cannot read current_link_width"}}}},
        {{"memory_gib", nullptr}}}},
      {"memory", {{"installed_gib", nullptr}, {"unknown", {{"installed_gib", "no source"}}}}}};
  EXPECT_EQ(unknown_reason(doc, "/gpus/0/memory_gib"), "NVML not loaded: Driver Not Loaded");
  EXPECT_EQ(unknown_reason(doc, "/gpus/0/pcie/width_current"), "cannot read current_link_width");
  EXPECT_EQ(unknown_reason(doc, "/memory/installed_gib"), "no source");
  EXPECT_EQ(unknown_reason(doc, "/gpus/1/memory_gib"), "");  // a null nobody explained
  EXPECT_EQ(unknown_reason(doc, "/gpus/7/memory_gib"), "");
}

TEST(GlobMatch, BenchmarkIds) {
  EXPECT_TRUE(glob_match("collectives.*", "collectives.all_reduce"));
  EXPECT_FALSE(glob_match("collectives.*", "compute.gemm"));
  EXPECT_TRUE(glob_match("compute.gem?", "compute.gemm"));
  EXPECT_TRUE(glob_match("*", "io.fio"));
}

}  // namespace
}  // namespace clusterbench
