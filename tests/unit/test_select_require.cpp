// select.require, select.unmet and select.describe of a records row: how bench/records/spec.cpp
// loads them (and refuses bad ones), fill_template, and how reports/rows.cpp judges records that
// meet the conditions or not. The seed's storage rows over real devices: test_storage_rows.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "cb_select_require";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

/// A table of one records row whose `select` is `select` (the rest fixed).
Spec spec_with_select(const std::string& name, const json& select) {
  json row = {{"id", "t.row"},    {"title", "t"},    {"source", "test"},    {"severity", "fail"},
              {"select", select}, {"scope", "node"}, {"aggregate", "each"}, {"op", ">="},
              {"value", 1},       {"unit", "GB/s"}};
  json doc = {{"schema", kSpecSchema}, {"name", name}, {"requirements", {row}}};
  return load_spec(temp_file(name + ".json", doc.dump()));
}

std::string load_error(const json& select) {
  try {
    spec_with_select("bad", select);
  } catch (const InputError& e) {
    return e.what();
  }
  return "loaded";
}

const json kRow = {{"benchmark", "test.disk"}, {"metric", "bw"}};

json with(json base, const json& more) {
  base.update(more);
  return base;
}

/// An ok test.disk record of `host` (bw 3 GB/s) with `extra`.
ResultRecord record(const std::string& host, const json& extra) {
  ResultRecord r;
  r.benchmark = "test.disk";
  r.params = {{"profile", "seq_read"}};
  r.scope.kind = ScopeKind::node, r.scope.host = host;
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  r.metrics.push_back({"bw", 3, "GB/s", true});
  r.extra = extra;
  return r;
}

const ItemResult& item_of(const RowResult& row, const std::string& item) {
  for (const auto& it : row.items)
    if (it.item == item) return it;
  throw std::runtime_error("no item " + item);
}

TEST(SelectRequire, LoadsWithTheRow) {
  Spec s = spec_with_select(
      "ok", with(kRow, {{"require", {{"/extra/disk/nvme", true}, {"/extra/n", {{">=", 2}}}}},
                        {"unmet", "on {/extra/disk/name}"},
                        {"describe", "{/extra/disk/name} {x}"}}));
  const Select& sel = s.requirements.at(0).select;
  EXPECT_EQ(sel.require.size(), 2u);
  EXPECT_EQ(sel.require.at("/extra/n").at(">="), 2);
  EXPECT_EQ(sel.unmet, "on {/extra/disk/name}");
  EXPECT_EQ(sel.describe, "{/extra/disk/name} {x}");
}

TEST(SelectRequire, BadConditionsAndTemplatesAreInputErrors) {
  EXPECT_NE(load_error(with(kRow, {{"require", json::array()}}))
                .find("field 'select.require' must be an object"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"require", {{"extra/nvme", true}}}}))
                .find("key 'extra/nvme' must start with '/'"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"require", {{"/extra/*/nvme", true}}}})).find("may not hold"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"require", {{"/extra/nvme", {{"~", true}}}}}}))
                .find("op '~' is not one of >= <= == != in matches"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"require", {{"/x", {{"nccl_ifname", "NCCL_SOCKET_IFNAME"}}}}}}))
                .find("op 'nccl_ifname' is not one of"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"require", {{"/x", {{">=", "a"}}}}}})).find("needs a number"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"unmet", "x"}})).find("'select.unmet' needs 'select.require'"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"describe", "on {/extra/x"}})).find("without its '}'"),
            std::string::npos);
  EXPECT_NE(load_error(with(kRow, {{"describe", "on {/extra/a~2}"}})).find("not a JSON pointer"),
            std::string::npos);
  json env = {{"env", "/cpu/physical_cores"}, {"require", {{"/x", 1}}}};
  EXPECT_NE(load_error(env).find("field 'select.require' is for records rows"), std::string::npos)
      << load_error(env);
}

TEST(SelectRequire, FillTemplate) {
  json doc = {{"extra", {{"s", "text"}, {"n", 2.5}, {"b", false}, {"z", nullptr}, {"a", {1, 2}}}}};
  EXPECT_EQ(fill_template("{/extra/s}|{/extra/n}|{/extra/b}|{/extra/z}|{/extra/q}|{/extra/a}", doc),
            "text|2.5|false|unknown|unknown|[1,2]");
  EXPECT_EQ(fill_template("{x} {/extra/s", doc), "{x} {/extra/s");  // not placeholders
  EXPECT_EQ(fill_template("", doc), "");
}

TEST(SelectRequire, WithoutUnmetTheRowSaysWhichConditionFailed) {
  ResultRecord rec = record("node01", {{"n", 1}});
  ResultRecord other = record("node02", {{"n", 4}});
  Spec s = spec_with_select("plain", with(kRow, {{"require", {{"/extra/n", {{">=", 2}}}}},
                                                 {"describe", "n={/extra/n}"}}));
  RunDir run = read_run_dir(std::string(CB_FIXTURES) + "/results/cpu-pass");
  run.run.plan.clear();
  run.records.records = {rec, other};
  Report r = make_report(run, s);
  const RowResult& row = r.rows.at(0);
  EXPECT_EQ(item_of(row, "node01").outcome, kMissing);
  EXPECT_EQ(
      item_of(row, "node01").message,
      "node01: not judged: record test.disk|{\"profile\":\"seq_read\"}|node01: /extra/n is 1, "
      "select.require wants {\">=\":2}");
  EXPECT_EQ(item_of(row, "node02").outcome, kPass);
  EXPECT_EQ(item_of(row, "node02").message, "3 GB/s on node02 (at least 1 GB/s); n=4");
}

TEST(SelectRequire, UnmetIsFilledOverTheRecordThatMissedIt) {
  ResultRecord a = record("node01", {{"kind", "hdd"}, {"where", "/tmp"}});
  ResultRecord b = record("node01", {{"kind", "hdd"}, {"where", "/var/tmp"}});
  b.params["profile"] = "seq_write";
  b.case_key = make_case_key(b.benchmark, b.params, b.scope);
  ResultRecord c = record("node02", {{"kind", "nvme"}, {"where", "/mnt/nvme"}});
  Spec s = spec_with_select(
      "unmet", with(kRow, {{"require", {{"/extra/kind", {{"in", {"nvme", "ssd"}}}}}},
                           {"unmet", "ran on {/extra/where} ({/extra/kind}, {/params/profile})"},
                           {"describe", "on {/extra/where}"}}));
  RunDir run = read_run_dir(std::string(CB_FIXTURES) + "/results/cpu-pass");
  run.run.plan.clear();
  run.records.records = {a, b, c};
  Report r = make_report(run, s);
  const RowResult& row = r.rows.at(0);
  EXPECT_EQ(row.outcome, kMissing);
  EXPECT_EQ(item_of(row, "node01").message,
            "node01: not judged: ran on /tmp (hdd, seq_read) (and 1 more records not meeting "
            "select.require)");
  EXPECT_EQ(item_of(row, "node01").records.size(), 2u);  // both are the item's evidence
  EXPECT_EQ(item_of(row, "node02").message, "3 GB/s on node02 (at least 1 GB/s); on /mnt/nvme");
  EXPECT_EQ(item_of(row, "node02").measured, "on /mnt/nvme");
  EXPECT_EQ(row.message, item_of(row, "node01").message + "; 2 items: 1 MISSING, 1 PASS");
  EXPECT_EQ(row.measured, "");  // the worst item was not compared
}

}  // namespace
}  // namespace clusterbench::report
