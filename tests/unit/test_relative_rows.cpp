// Relative rows (Requirement::relative "typical"): how a table declares them, how an item is
// judged against the typical link of its own path, that a row on fewer than 3 nodes does not
// apply, and that a slow node's healthy peers are not drained for its links (issue 47).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "reports/render.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

/// The twin row as the shipped base table has it, with `over` applied.
json twin(const json& over = json::object()) {
  json r = {{"id", "t.typical"},
            {"title", "t"},
            {"source", "test"},
            {"severity", "fail"},
            {"select",
             {{"benchmark", "network.p2p"},
              {"params", {{"mode", "unidirectional"}}},
              {"metric", "bandwidth"}}},
            {"scope", "link"},
            {"aggregate", "each"},
            {"op", ">="},
            {"value", 50},
            {"unit", "%"},
            {"relative", "typical"}};
  r.update(over);
  return r;
}

Spec spec_of(const std::string& name, const json& rows, const std::string& schema = kSpecSchema) {
  std::string dir = ::testing::TempDir() + "cb_relative";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name + ".json")
      << json({{"schema", schema}, {"name", name}, {"requirements", rows}}).dump();
  return load_spec(dir + "/" + name + ".json");
}

std::string load_error(const json& row, const std::string& schema = kSpecSchema) {
  try {
    spec_of("bad", json::array({row}), schema);
  } catch (const InputError& e) {
    return e.what();
  }
  return "loaded";
}

ResultRecord link(const std::string& a, const std::string& b, double gbs,
                  const std::string& rail = "") {
  ResultRecord r;
  r.benchmark = "network.p2p";
  r.params = {{"mode", "unidirectional"}, {"bytes", 1048576}};
  if (!rail.empty()) r.params["rail"] = rail;
  r.scope.kind = ScopeKind::link;
  r.scope.hosts = {a, b};
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  r.metrics.push_back({"bandwidth", gbs, "GB/s", true});
  return r;
}

/// A run of `records` only (no env, no plan).
RunDir run_of(const std::vector<ResultRecord>& records) {
  RunDir run = read_run_dir(std::string(CB_FIXTURES) + "/results/cpu-pass");
  run.run.plan.clear();
  run.run.env.clear();
  run.run.hosts.clear();
  run.records.records = records;
  return run;
}

const ItemResult& item_of(const RowResult& row, const std::string& item) {
  for (const auto& it : row.items)
    if (it.item == item) return it;
  throw std::runtime_error("no item " + item);
}

TEST(RelativeRows, BadDeclarationsAreNamed) {
  EXPECT_EQ(load_error(twin()), "loaded");
  EXPECT_NE(load_error(twin({{"relative", "median"}})).find("'relative' is 'median'"),
            std::string::npos);
  EXPECT_NE(load_error(twin({{"unit", "GB/s"}})).find("must be '%' with 'relative'"),
            std::string::npos);
  EXPECT_NE(load_error(twin({{"op", "=="}})).find("'>=' or '<=' with 'relative'"),
            std::string::npos);
  EXPECT_NE(load_error(twin({{"value", 0}})).find("a percent above 0"), std::string::npos);
  EXPECT_NE(load_error(twin({{"scope", "cluster"}})).find("scope link, gpu or node"),
            std::string::npos);
  EXPECT_NE(load_error(twin({{"select", {{"env", "/cpu/physical_cores"}}}, {"unit", "%"}}))
                .find("records row"),
            std::string::npos);
  EXPECT_NE(load_error(twin(), "clusterbench.spec/4").find("'relative' needs schema"),
            std::string::npos);
}

// Four nodes at 20 GB/s on MPI's path, h1<->h2 at 6; a rail at 2 GB/s with h3<->h4 at 1.2.
// Typical link on MPI's path: the hosts' medians are h1 {6,20,20} 20, h2 20, h3 20, h4 20: 20.
// h1<->h2 is 30% (FAIL), the rest 100%. On the rail (over TCP) the typical is 2: h3<->h4 is
// 60%, a PASS, though 1.2 GB/s is far below the MPI path's 12.5 GB/s floor.
TEST(RelativeRows, EachLinkAgainstTheTypicalLinkOfItsPath) {
  std::vector<ResultRecord> recs;
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"h1", "h2"}, {"h1", "h3"}, {"h1", "h4"}, {"h2", "h3"}, {"h2", "h4"}, {"h3", "h4"}}) {
    recs.push_back(link(a, b, a == "h1" && b == "h2" ? 6 : 20));
    recs.push_back(link(a, b, a == "h3" && b == "h4" ? 1.2 : 2, "rail0"));
  }
  Report r = make_report(run_of(recs), spec_of("twin", json::array({twin()})));
  const RowResult& row = r.rows.at(0);
  EXPECT_EQ(row.outcome, kFail);
  EXPECT_TRUE(row.not_applicable.empty());
  EXPECT_EQ(row.worst_item, "h1<->h2");
  EXPECT_DOUBLE_EQ(row.value.get<double>(), 30);
  EXPECT_EQ(item_of(row, "h1<->h2").message.substr(0, item_of(row, "h1<->h2").message.find(';')),
            "worst of 2 30 % on h1<->h2 (below 50 %)");
  EXPECT_NE(item_of(row, "h1<->h2").message.find("100% = the typical link (20 GB/s)"),
            std::string::npos)
      << item_of(row, "h1<->h2").message;
  // h3<->h4: 100% on MPI's path, 60% on the rail: a PASS, whose message names the rail's typical.
  EXPECT_EQ(item_of(row, "h3<->h4").outcome, kPass);
  EXPECT_NE(item_of(row, "h3<->h4").message.find("the typical link on rail0 (2 GB/s)"),
            std::string::npos)
      << item_of(row, "h3<->h4").message;
  EXPECT_EQ(exit_code(r), 1);
  // The drain list: both ends of the one slow link (nothing locates it on either end).
  EXPECT_EQ(r.fleet.failing_hosts, (std::vector<std::string>{"h1", "h2"}));

  // The absolute row on MPI's path only: {"rail": null} leaves the rail's records out.
  json abs_row = twin({{"id", "t.abs"}, {"severity", "warn"}, {"value", 12.5}, {"unit", "GB/s"}});
  abs_row.erase("relative");
  abs_row["select"]["params"]["rail"] = nullptr;
  Report a = make_report(run_of(recs), spec_of("abs", json::array({abs_row})));
  EXPECT_EQ(a.rows.at(0).items.size(), 6u);
  EXPECT_EQ(a.rows.at(0).value, 6);  // not the rail's 1.2
}

TEST(RelativeRows, OnFewerThanThreeNodesTheRowDoesNotApply) {
  Report r = make_report(run_of({link("a", "b", 1)}), spec_of("two", json::array({twin()})));
  const RowResult& row = r.rows.at(0);
  EXPECT_EQ(row.outcome, kWaived);
  EXPECT_EQ(row.not_applicable, "2 node(s): a typical link needs 3 nodes to compare with");
  EXPECT_EQ(row.message, "not applicable: " + row.not_applicable);
  EXPECT_EQ(exit_code(r), 0);  // a fail row WAIVED would be 4: it does not count
  EXPECT_EQ(render_json(r)["rows"][0]["not_applicable"], row.not_applicable);
}

// Every link of h3 at 5 GB/s among 20 GB/s links on 5 nodes: the twin FAILs h3's four links,
// the localisation blames node h3, and only h3 is drained, not its four healthy peers.
TEST(RelativeRows, ASlowNodesPeersAreNotDrainedForItsLinks) {
  std::vector<ResultRecord> recs;
  for (int i = 1; i <= 5; ++i)
    for (int j = i + 1; j <= 5; ++j) {
      ResultRecord r =
          link("h" + std::to_string(i), "h" + std::to_string(j), i == 3 || j == 3 ? 5 : 20);
      r.time.n = 5, r.time.median = 0.1, r.time.min = 0.099;
      recs.push_back(r);
    }
  Report r = make_report(run_of(recs), spec_of("node", json::array({twin()})));
  EXPECT_EQ(r.rows.at(0).outcome, kFail);
  int failed = 0;
  for (const auto& it : r.rows.at(0).items) failed += it.outcome == kFail;
  EXPECT_EQ(failed, 4);
  ASSERT_EQ(r.fleet.located.size(), 1u);
  EXPECT_EQ(r.fleet.located[0].kind, "node");
  EXPECT_EQ(r.fleet.failing_hosts, (std::vector<std::string>{"h3"}));
}

}  // namespace
}  // namespace clusterbench::report
