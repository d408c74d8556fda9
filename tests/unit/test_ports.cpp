// Port checks: NICs collected from fixture trees in sysfs formats (tests/fixtures/fsroot-net),
// NCCL interface-list matching (reports/ifname.cpp), the `where` filter of env rows and the
// net.* rows of reports/specs/base.json judged over those NICs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <tuple>

#include "env/inventory.hpp"
#include "reports/ifname.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

const std::string kDegraded = std::string(CB_FIXTURES) + "/fsroot-net/degraded";
const std::string kTwoSocket = std::string(CB_FIXTURES) + "/fsroot/two-socket";
// A netns or container node: a veth, a bridge, a macvlan, a down docker0, lo and a tunnel.
const std::string kVirtual = std::string(CB_FIXTURES) + "/fsroot-net/virtual";

const NicInfo* nic(const std::vector<NicInfo>& nics, const std::string& name) {
  for (const auto& n : nics)
    if (n.name == name) return &n;
  return nullptr;
}

TEST(PortsInventory, DegradedTreeReadsRateStateAndOperstate) {
  std::vector<std::string> warnings;
  auto nics = collect_nics(kDegraded, warnings);
  ASSERT_EQ(nics.size(), 5u);  // three IB ports, eno1, eno2; lo has no device
  const NicInfo* good = nic(nics, "mlx5_0/1");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->state, "ACTIVE");
  EXPECT_EQ(good->phys_state, "LinkUp");
  EXPECT_DOUBLE_EQ(good->rate_gbps.value_or(-1), 200);
  EXPECT_EQ(good->netdev, "ib0");
  EXPECT_EQ(good->mtu, 4092);
  const NicInfo* slow = nic(nics, "mlx5_1/1");
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->state, "ACTIVE");
  EXPECT_DOUBLE_EQ(slow->rate_gbps.value_or(-1), 100);
  const NicInfo* down = nic(nics, "mlx5_2/1");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->state, "DOWN");
  EXPECT_EQ(down->phys_state, "Polling");
  EXPECT_DOUBLE_EQ(down->rate_gbps.value_or(-1), 10);
  const NicInfo* eno2 = nic(nics, "eno2");
  ASSERT_TRUE(eno2);
  EXPECT_EQ(eno2->state, "down");
  EXPECT_FALSE(eno2->rate_gbps.has_value());  // speed -1 while the link is down: unknown
  EXPECT_EQ(eno2->mtu, 1500);
  EXPECT_EQ(nic(nics, "eno1")->mtu, 9000);
  EXPECT_DOUBLE_EQ(nic(nics, "eno1")->rate_gbps.value_or(-1), 10);
}

TEST(PortsInventory, DownPortSpeedIsUnknownWithTheReason) {
  std::vector<std::string> warnings;
  auto nics = collect_nics(kDegraded, warnings);
  const NicInfo* eno2 = nic(nics, "eno2");
  ASSERT_TRUE(eno2);
  EXPECT_EQ(eno2->unknown.at("rate_gbps"),
            "sysfs speed -1 (link down, or the driver does not report its speed)");
  EXPECT_TRUE(json(*eno2).at("rate_gbps").is_null());
}

TEST(PortsInventory, VirtualInterfacesAreFlaggedWithoutARate) {
  std::vector<std::string> warnings;
  auto nics = collect_nics(kVirtual, warnings);
  EXPECT_TRUE(warnings.empty());
  std::vector<std::string> names;
  for (const auto& n : nics) names.push_back(n.name);
  // Sorted by name; lo (loopback) and tunl0 (not Ethernet) left out; no physical NIC is
  // visible, so one entry stands for them, with its state and rate unknown and why.
  EXPECT_EQ(names, (std::vector<std::string>{"br0", "docker0", "mv0", "to2",
                                             "(physical NICs not visible)"}));
  const NicInfo& hidden = nics.back();
  EXPECT_FALSE(hidden.is_virtual);
  EXPECT_EQ(hidden.kind, "not_visible");
  EXPECT_EQ(hidden.state, "");
  EXPECT_FALSE(hidden.rate_gbps.has_value());
  EXPECT_EQ(hidden.unknown.at("rate_gbps"),
            "no physical NIC is visible here, only br0 (bridge), docker0 (bridge), mv0 "
            "(virtual), to2 (veth): a network namespace or container shows only its own "
            "interfaces (run outside it, or give it the NICs)");
  nics.pop_back();
  for (const auto& n : nics) {
    EXPECT_TRUE(n.is_virtual) << n.name;
    EXPECT_FALSE(n.rate_gbps.has_value()) << n.name;  // a veth's 10000 is no link rate
    EXPECT_EQ(n.netdev, n.name);
    EXPECT_EQ(n.pci_bus_id, "");
    EXPECT_EQ(n.link_layer, "Ethernet");
  }
  EXPECT_EQ(nic(nics, "to2")->kind, "veth");  // iflink names its peer
  EXPECT_EQ(nic(nics, "to2")->state, "up");
  EXPECT_EQ(nic(nics, "to2")->unknown.at("rate_gbps"),
            "virtual interface (veth): no physical link rate");
  EXPECT_EQ(nic(nics, "br0")->kind, "bridge");
  EXPECT_EQ(nic(nics, "docker0")->state, "down");
  EXPECT_EQ(nic(nics, "mv0")->kind, "virtual");  // a macvlan: only ethtool names it
  EXPECT_EQ(json(*nic(nics, "to2")).at("virtual"), true);
}

TEST(NcclIfname, PrefixListMatchesByPrefix) {
  auto l = parse_ifname_list("ib,eth1");
  EXPECT_FALSE(l.exclude);
  EXPECT_FALSE(l.exact);
  EXPECT_EQ(l.entries, (std::vector<std::string>{"ib", "eth1"}));
  EXPECT_TRUE(ifname_matches(l, "ib0"));
  EXPECT_TRUE(ifname_matches(l, "ib12"));
  EXPECT_TRUE(ifname_matches(l, "eth10"));  // a prefix: eth1 matches eth10 too
  EXPECT_FALSE(ifname_matches(l, "eth0"));
  EXPECT_FALSE(ifname_matches(l, "i"));
}

TEST(NcclIfname, EqualsMeansExactNames) {
  auto l = parse_ifname_list("=eth1,ib0");
  EXPECT_TRUE(l.exact);
  EXPECT_TRUE(ifname_matches(l, "eth1"));
  EXPECT_FALSE(ifname_matches(l, "eth10"));
  EXPECT_TRUE(ifname_matches(l, "ib0"));
  EXPECT_FALSE(ifname_matches(l, "ib01"));
}

TEST(NcclIfname, CaretExcludes) {
  auto l = parse_ifname_list("^docker,lo");
  EXPECT_TRUE(l.exclude);
  EXPECT_TRUE(ifname_matches(l, "eth0"));
  EXPECT_TRUE(ifname_matches(l, "ib0"));
  EXPECT_FALSE(ifname_matches(l, "docker0"));
  EXPECT_FALSE(ifname_matches(l, "lo"));
  auto exact_out = parse_ifname_list("^=eth0");
  EXPECT_TRUE(exact_out.exclude);
  EXPECT_TRUE(exact_out.exact);
  EXPECT_FALSE(ifname_matches(exact_out, "eth0"));
  EXPECT_TRUE(ifname_matches(exact_out, "eth01"));
}

TEST(NcclIfname, PortSuffixAndEmptyLists) {
  auto l = parse_ifname_list("ib0:1234,,eth");
  EXPECT_EQ(l.entries, (std::vector<std::string>{"ib0", "eth"}));
  EXPECT_TRUE(ifname_matches(l, "ib0"));
  EXPECT_TRUE(ifname_matches(parse_ifname_list(""), "anything"));  // no list: all
  EXPECT_FALSE(ifname_matches(parse_ifname_list("^"), "eth0"));    // excluding "all"
}

/// A run whose env holds one node per (host, fs tree, NCCL_SOCKET_IFNAME or "" for unset).
RunDir run_of(const std::vector<std::tuple<std::string, std::string, std::string>>& nodes) {
  RunDir rd;
  rd.run.run_id = "test";
  for (const auto& [host, tree, ifname] : nodes) {
    EnvRecord e;
    e.host = host;
    std::vector<std::string> w;
    e.nics = collect_nics(tree, w);
    if (!ifname.empty()) e.environment["NCCL_SOCKET_IFNAME"] = ifname;
    rd.run.env.push_back(e);
    rd.run.hosts.push_back(host);
  }
  return rd;
}

const RowResult& row(const Report& r, const std::string& id) {
  for (const auto& x : r.rows)
    if (x.req.id == id) return x;
  throw std::runtime_error("no row " + id);
}

const ItemResult* item(const RowResult& r, const std::string& name) {
  for (const auto& i : r.items)
    if (i.item == name) return &i;
  return nullptr;
}

class BaseRows : public ::testing::Test {
 protected:
  Spec spec = load_spec(std::string(CB_SOURCE_DIR) + "/reports/specs/base.json");
};

TEST_F(BaseRows, HealthyNodePassesEveryPortRow) {
  Report r = make_report(run_of({{"good", kTwoSocket, "ib0"}}), spec);
  const auto& count = row(r, "net.ports_active_at_rate");
  EXPECT_EQ(count.outcome, kPass) << count.message;
  EXPECT_EQ(count.value, 2);  // mlx5_0/1 and mlx5_1/1, both ACTIVE at 200 Gb/s
  EXPECT_EQ(row(r, "net.ib_port_rate").outcome, kPass);
  EXPECT_EQ(row(r, "net.ib_port_state").outcome, kPass);
  const auto& nccl = row(r, "net.nccl_socket_ifname_up");
  EXPECT_EQ(nccl.outcome, kPass) << nccl.message;
  EXPECT_EQ(nccl.value, 1);  // ib0 only
}

TEST_F(BaseRows, TrainedDownPortFailsNamingThePort) {
  Report r = make_report(run_of({{"bad", kDegraded, "ib0"}}), spec);
  const auto& rate = row(r, "net.ib_port_rate");
  EXPECT_EQ(rate.outcome, kFail);
  EXPECT_EQ(rate.worst_item, "bad/nic[mlx5_1/1]");
  EXPECT_EQ(rate.value, 100);
  // The down port is not judged on rate (only ACTIVE ports), but fails the state row (warn).
  EXPECT_EQ(item(rate, "bad/nic[mlx5_2/1]"), nullptr);
  ASSERT_TRUE(item(rate, "bad/nic[mlx5_0/1]"));
  EXPECT_EQ(item(rate, "bad/nic[mlx5_0/1]")->outcome, kPass);
  const auto& state = row(r, "net.ib_port_state");
  EXPECT_EQ(state.outcome, kWarn);
  EXPECT_EQ(state.worst_item, "bad/nic[mlx5_2/1]");
  EXPECT_EQ(state.value, "DOWN");
  // One port left ACTIVE at 200 Gb/s: the count row passes with 1 against a spec of 1.
  EXPECT_EQ(row(r, "net.ports_active_at_rate").value, 1);
  EXPECT_EQ(row(r, "net.ports_active_at_rate").outcome, kPass);
}

TEST_F(BaseRows, NcclIfnameOnDownOrAbsentInterfaceFails) {
  Report r = make_report(run_of({{"a", kDegraded, "ib2"},       // present, port DOWN
                                 {"b", kDegraded, "=eth0"},     // absent
                                 {"c", kDegraded, "eno"},       // eno1 up, eno2 down
                                 {"d", kDegraded, "^ib,eno1"},  // only eno2 left: down
                                 {"e", kDegraded, ""}}),        // unset: all but docker, lo
                         spec);
  const auto& nccl = row(r, "net.nccl_socket_ifname_up");
  EXPECT_EQ(nccl.outcome, kFail);
  EXPECT_EQ(item(nccl, "a")->value, 0);
  EXPECT_EQ(item(nccl, "a")->outcome, kFail);
  EXPECT_EQ(item(nccl, "b")->value, 0);
  EXPECT_EQ(item(nccl, "c")->value, 1);
  EXPECT_EQ(item(nccl, "c")->outcome, kPass);
  EXPECT_EQ(item(nccl, "d")->value, 0);
  EXPECT_EQ(item(nccl, "e")->value, 3);  // ib0, ib1 (ACTIVE), eno1 (up)
}

TEST_F(BaseRows, VirtualInterfacesCarryNcclButAreNoPhysicalNics) {
  // A netns-cluster node: its collectives ran over a veth. NCCL_SOCKET_IFNAME unset (NCCL's
  // default ^docker,lo), then naming the veth, then a name that is not there.
  Report r = make_report(
      run_of({{"cbns1", kVirtual, ""}, {"cbns2", kVirtual, "to"}, {"cbns3", kVirtual, "=eth0"}}),
      spec);
  const auto& nccl = row(r, "net.nccl_socket_ifname_up");
  EXPECT_EQ(item(nccl, "cbns1")->outcome, kPass) << item(nccl, "cbns1")->message;
  EXPECT_EQ(item(nccl, "cbns1")->value, 3);  // to2, br0, mv0 up; docker0 excluded and down
  EXPECT_EQ(item(nccl, "cbns2")->outcome, kPass);
  EXPECT_EQ(item(nccl, "cbns2")->value, 1);  // to2
  EXPECT_EQ(item(nccl, "cbns3")->outcome, kFail);
  EXPECT_EQ(item(nccl, "cbns3")->value, 0);
  // No physical NIC visible (the namespace hides them): neither the rate nor the count of
  // active ports is known, both MISSING with why; never FAIL at 0 (issue 19).
  const auto& rate = row(r, "host.network_rate");
  EXPECT_EQ(item(rate, "cbns1")->outcome, kMissing);
  EXPECT_NE(
      item(rate, "cbns1")
          ->message.find(
              "the rate of physical NICs is unknown: no physical NIC is visible here, only br0 (bridge)"),
      std::string::npos)
      << item(rate, "cbns1")->message;
  const auto& ports = row(r, "net.ports_active_at_rate");
  EXPECT_EQ(ports.outcome, kMissing) << ports.message;
  EXPECT_NE(ports.message.find("no physical NIC is visible here"), std::string::npos)
      << ports.message;
  // Virtual interfaces have no firmware: the uniformity check sees no NICs, not "unknown".
  for (const auto& f : r.uniformity.fields) {
    if (f.name == "firmware.nic") {
      EXPECT_EQ(f.reference, "no NICs");
    }
  }
}

TEST_F(BaseRows, VirtualInterfaceRatesNeverPassThePhysicalRows) {
  // A virtual interface with a rate (a hand-edited or foreign record) is still not a NIC.
  RunDir rd = run_of({{"n1", kDegraded, ""}});
  NicInfo fake;
  fake.name = fake.netdev = "veth9";
  fake.kind = "veth";
  fake.state = "up";
  fake.rate_gbps = 400;
  fake.is_virtual = true;
  // Physical NICs left: mlx5_2/1 and eno1, both 10 Gb/s.
  auto& nics = rd.run.env[0].nics;
  std::erase_if(nics, [](const NicInfo& n) { return n.name != "mlx5_2/1" && n.name != "eno1"; });
  ASSERT_EQ(nics.size(), 2u);
  nics.push_back(fake);
  Report r = make_report(rd, spec);
  const auto& rate = row(r, "host.network_rate");
  EXPECT_EQ(rate.outcome, kFail) << rate.message;
  EXPECT_EQ(rate.value, 10);
  EXPECT_EQ(row(r, "net.ports_active_at_rate").value, 0);
  EXPECT_EQ(row(r, "net.ports_active_at_rate").outcome, kFail);
}

TEST_F(BaseRows, UnknownSpeedOfADownPortDoesNotDecideTheRate) {
  // degraded: mlx5_0/1 at 200 known, eno2's speed -1 unknown: the fastest port passes anyway.
  Report r = make_report(run_of({{"n1", kDegraded, ""}}), spec);
  const auto& rate = row(r, "host.network_rate");
  EXPECT_EQ(rate.outcome, kPass) << rate.message;
  EXPECT_EQ(rate.value, 200);
  EXPECT_NE(rate.message.find("not needed to decide: the rate of NIC eno2 is unknown: sysfs speed -1"),
            std::string::npos)
      << rate.message;
  // Without the IB ports, eno1's 10 Gb/s no longer decides: eno2 may be the fast one.
  RunDir rd = run_of({{"n1", kDegraded, ""}});
  auto& nics = rd.run.env[0].nics;
  nics.erase(nics.begin(), nics.begin() + 3);
  Report slow = make_report(rd, spec);
  const auto& unknown = row(slow, "host.network_rate");
  EXPECT_EQ(unknown.outcome, kMissing);  // was FAIL "0 Gb/s"
  EXPECT_EQ(unknown.message,
            "n1: the rate of NIC eno2 is unknown: sysfs speed -1 (link down, or the driver does not "
            "report its speed)");
  EXPECT_NE(std::find(slow.warnings.begin(), slow.warnings.end(),
                      "n1: /nics/1/rate_gbps unknown: sysfs speed -1 (link down, or the driver "
                      "does not report its speed)"),
            slow.warnings.end());
}

TEST(WhereFilter, RejectsUnknownFieldsAndOps) {
  auto load = [](const json& where) {
    json doc = {{"schema", kSpecSchema},
                {"name", "w"},
                {"requirements",
                 {{{"id", "r"},
                   {"title", "t"},
                   {"source", "s"},
                   {"severity", "fail"},
                   {"select", {{"env", "/nics/*/rate_gbps"}, {"where", where}}},
                   {"scope", "node"},
                   {"aggregate", "count"},
                   {"op", ">="},
                   {"value", 1},
                   {"unit", "count"}}}}};
    std::string path = ::testing::TempDir() + "cb_where.json";
    std::ofstream(path) << doc.dump();
    try {
      load_spec(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(load({{"/state", "ACTIVE"}, {"/rate_gbps", {{">=", 200}}}}), "");
  EXPECT_NE(load({{"/colour", "red"}}).find("'/nics/*/colour' is not a known env field"),
            std::string::npos);
  EXPECT_NE(load({{"/state", {{"like", "A"}}}}).find("op 'like'"), std::string::npos);
  EXPECT_NE(load({{"/rate_gbps", {{">=", "fast"}}}}).find("needs a number"), std::string::npos);
  EXPECT_NE(load(json::array()).find("must be an object"), std::string::npos);
}

}  // namespace
}  // namespace clusterbench::report
