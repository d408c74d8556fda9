// Storage tiers: the spec table's `tiers`
// (bench/records/spec.cpp), what io.tiers finds at a tier's path (io/tiers.cpp: probe_tier,
// tier_media, data_filesystems), and how reports/rows.cpp counts a shared filesystem once
// (select.distinct) and says why a record lacks a metric (extra.unmeasured).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/tiers.hpp"
#include "reports/report.hpp"

namespace clusterbench {
namespace {

namespace fs = std::filesystem;

/// A fresh directory of this process: ctest runs each test in its own process, two at a time,
/// and tests that share a name ("root") must not remove each other's trees.
std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "cb_tiers-" + std::to_string(::getpid()) + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string write(const std::string& dir, const std::string& name, const json& doc) {
  std::ofstream(dir + "/" + name) << doc.dump(2);
  return dir + "/" + name;
}

const json kRow = {
    {"id", "t.row"},    {"title", "t"},
    {"source", "test"}, {"severity", "fail"},
    {"scope", "node"},  {"aggregate", "each"},
    {"op", ">="},       {"value", 1},
    {"unit", "count"},  {"select", {{"benchmark", "io.tiers"}, {"metric", "mounted"}}}};

std::string load_error(const std::string& path) {
  try {
    load_spec(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "loaded";
}

TEST(SpecTiers, ParsedMergedAndOrdered) {
  const std::string dir = temp_dir("spec");
  write(dir, "parent.json",
        {{"schema", kSpecSchema},
         {"name", "parent"},
         {"requirements", {kRow}},
         {"tiers",
          {{"cold", {{"path", "s3://archive/x"}, {"title", "archive"}}},
           {"hot", {{"path", nullptr}, {"title", "fast"}}}}}});
  const std::string child = write(dir, "child.json",
                                  {{"schema", kSpecSchema},
                                   {"name", "child"},
                                   {"extends", "parent.json"},
                                   {"requirements", json::array()},
                                   {"tiers",
                                    {{"hot", {{"path", "/mnt/hot"}, {"shared", true}}},
                                     {"warm", {{"path", "/data/warm"}, {"mount_point", false}}}}}});
  Spec s = load_spec(child);
  ASSERT_EQ(s.tiers.size(), 3u);
  EXPECT_EQ(s.tiers[0].name, "hot");
  EXPECT_EQ(s.tiers[0].path, "/mnt/hot");
  EXPECT_EQ(s.tiers[0].title, "fast");  // kept from the parent
  EXPECT_EQ(s.tiers[0].shared, std::optional<bool>(true));
  EXPECT_TRUE(s.tiers[0].mount_point);
  EXPECT_EQ(s.tiers[1].name, "warm");
  EXPECT_FALSE(s.tiers[1].mount_point);
  EXPECT_FALSE(s.tiers[1].shared.has_value());
  EXPECT_EQ(s.tiers[2].path, "s3://archive/x");
  json j = tiers_json(s.tiers);
  EXPECT_EQ(j[0]["shared"], true);
  EXPECT_TRUE(j[1]["shared"].is_null());
  EXPECT_EQ(j[2]["path"], "s3://archive/x");
}

TEST(SpecTiers, BadTiersAreInputErrors) {
  const std::string dir = temp_dir("bad");
  auto table = [&](const std::string& name, const json& tiers, const char* schema = kSpecSchema) {
    return write(dir, name + ".json",
                 {{"schema", schema}, {"name", name}, {"requirements", {kRow}}, {"tiers", tiers}});
  };
  EXPECT_NE(load_error(table("name", {{"lukewarm", {{"path", "/x"}}}}))
                .find("tiers: 'lukewarm' is not a tier (hot, warm or cold)"),
            std::string::npos);
  EXPECT_NE(load_error(table("rel", {{"hot", {{"path", "mnt/hot"}}}}))
                .find("tiers.hot: field 'path': 'mnt/hot' is neither an absolute path nor an "
                      "object-storage URL"),
            std::string::npos);
  EXPECT_NE(load_error(table("key", {{"hot", {{"paht", "/x"}}}})).find("unknown field 'paht'"),
            std::string::npos);
  EXPECT_NE(load_error(table("type", {{"hot", {{"shared", "yes"}}}})).find("shared"),
            std::string::npos);
  EXPECT_NE(load_error(table("old", {{"hot", {{"path", "/x"}}}}, kSpecSchemaV3))
                .find("field 'tiers' needs schema clusterbench.spec/4 or later"),
            std::string::npos);
  EXPECT_NE(load_error(table("ctl", {{"hot", {{"path", "/x\ny"}}}})).find("control character"),
            std::string::npos);
}

TEST(SpecTiers, PathForms) {
  EXPECT_TRUE(is_object_storage_url("s3://bucket/prefix"));
  EXPECT_TRUE(is_object_storage_url("gs://b"));
  EXPECT_FALSE(is_object_storage_url("s3://"));
  EXPECT_FALSE(is_object_storage_url("/mnt/s3://x"));
  EXPECT_FALSE(is_object_storage_url("://x"));
  EXPECT_EQ(tier_path_refusal("/mnt/hot"), "");
  EXPECT_EQ(tier_path_refusal("s3://bucket"), "");
  EXPECT_NE(tier_path_refusal("hot"), "");
  EXPECT_NE(tier_path_refusal(""), "");
  EXPECT_FALSE(is_object_storage_url("file:///tmp"));  // a local filesystem, not a store
  EXPECT_NE(tier_path_refusal("file:///tmp").find("a URL of no object store"), std::string::npos);
  EXPECT_NE(tier_path_refusal("http://x"), "");
  EXPECT_NE(tier_path_refusal("S3://b"), "");
}

// --- probe_tier --------------------------------------------------------------------------------

io::SpaceOf fixed_space(double capacity, double free) {
  return [=](const std::string&) {
    return std::optional<io::FsSpace>(io::FsSpace{capacity, free});
  };
}

struct Fixture {
  std::string root;
  std::vector<io::Mount> mounts;
};

/// A root with /mnt/hot (a mount of its own), /mnt/empty (a directory on /), /srv/nfs (nfs4).
Fixture fixture() {
  Fixture f{temp_dir("root"), {}};
  for (const char* d : {"/mnt/hot", "/mnt/empty", "/srv/nfs"}) fs::create_directories(f.root + d);
  fs::create_directory_symlink(f.root + "/mnt/hot", f.root + "/hot");
  f.mounts = {{"/", "ext4", "/dev/vda1", "rw", "254:1"},
              {"/mnt/hot", "xfs", "/dev/nvme0n1p1", "rw", "259:1"},
              {"/srv/nfs", "nfs4", "filer:/export/warm", "rw", "0:53"}};
  return f;
}

TEST(ProbeTier, AMountPointOfItsOwn) {
  Fixture f = fixture();
  io::TierProbe p = io::probe_tier({"hot", "/hot", "--set io.tiers.hot", std::nullopt, true},
                                   f.mounts, "node01", f.root, fixed_space(3.84, 1.5));
  EXPECT_TRUE(p.mounted) << p.reason;
  EXPECT_EQ(p.real_path, "/mnt/hot");  // the symlink followed
  EXPECT_EQ(p.device.fs_type, "xfs");
  EXPECT_FALSE(p.shared);
  EXPECT_EQ(p.filesystem_id, "local:node01:259:1");
  ASSERT_TRUE(p.space);
  EXPECT_DOUBLE_EQ(p.space->capacity_tb, 3.84);
  EXPECT_EQ(p.summary.rfind("hot /hot on node01: xfs on /mnt/hot from /dev/nvme0n1p1, ", 0), 0u)
      << p.summary;
  EXPECT_NE(p.summary.find("3.84 TB, 1.5 TB free, local (summed over nodes)"), std::string::npos)
      << p.summary;
  json j = io::tier_json({"hot", "/hot", "--set io.tiers.hot", std::nullopt, true}, p);
  EXPECT_EQ(j["capacity_tb"], 3.84);
  EXPECT_EQ(j["counting"], "local: summed over nodes");
}

TEST(ProbeTier, NotMountedIsSaidWithTheReason) {
  Fixture f = fixture();
  io::TierProbe gone = io::probe_tier({"hot", "/mnt/nowhere", "t", std::nullopt, true}, f.mounts,
                                      "node02", f.root, fixed_space(1, 1));
  EXPECT_FALSE(gone.mounted);
  EXPECT_NE(gone.reason.find("/mnt/nowhere does not exist"), std::string::npos) << gone.reason;
  EXPECT_FALSE(gone.space);
  io::TierProbe empty = io::probe_tier({"hot", "/mnt/empty", "t", std::nullopt, true}, f.mounts,
                                       "node02", f.root, fixed_space(1, 1));
  EXPECT_FALSE(empty.mounted);
  EXPECT_NE(empty.reason.find("/mnt/empty is a directory on / (ext4 from /dev/vda1), not a "
                              "mount point of its own"),
            std::string::npos)
      << empty.reason;
  EXPECT_EQ(empty.summary.rfind("hot /mnt/empty on node02: not mounted: ", 0), 0u);
  json j = io::tier_json({"hot", "/mnt/empty", "t", std::nullopt, true}, empty);
  EXPECT_TRUE(j["capacity_tb"].is_null());
  EXPECT_TRUE(j["filesystem_id"].is_null());
  // A tier the table allows to be a plain directory is on the filesystem above it.
  io::TierProbe dir = io::probe_tier({"warm", "/mnt/empty", "t", std::nullopt, false}, f.mounts,
                                     "node02", f.root, fixed_space(0.5, 0.25));
  EXPECT_TRUE(dir.mounted);
  EXPECT_EQ(dir.device.mount_point, "/");
  EXPECT_EQ(dir.filesystem_id, "local:node02:254:1");
}

TEST(ProbeTier, ANetworkFilesystemIsSharedByItsSource) {
  Fixture f = fixture();
  io::TierProbe a = io::probe_tier({"warm", "/srv/nfs", "t", std::nullopt, true}, f.mounts,
                                   "node01", f.root, fixed_space(500, 100));
  io::TierProbe b = io::probe_tier({"warm", "/srv/nfs", "t", std::nullopt, true}, f.mounts,
                                   "node02", f.root, fixed_space(500, 100));
  EXPECT_TRUE(a.network && a.shared);
  EXPECT_EQ(a.media, "network (nfs4)");
  EXPECT_EQ(a.filesystem_id, "shared:nfs4:filer:/export/warm");
  EXPECT_EQ(a.filesystem_id, b.filesystem_id);
  // Declared shared: a local-looking filesystem counts once too; declared local: per node.
  io::TierProbe s = io::probe_tier({"hot", "/mnt/hot", "t", true, true}, f.mounts, "node01", f.root,
                                   fixed_space(1, 1));
  EXPECT_EQ(s.filesystem_id, "shared:xfs:/dev/nvme0n1p1");
  io::TierProbe l = io::probe_tier({"warm", "/srv/nfs", "t", false, true}, f.mounts, "node01",
                                   f.root, fixed_space(1, 1));
  EXPECT_EQ(l.filesystem_id, "local:node01:0:53");
}

TEST(ProbeTier, CapacityUnknownWhenStatvfsFails) {
  Fixture f = fixture();
  io::TierProbe p =
      io::probe_tier({"hot", "/mnt/hot", "t", std::nullopt, true}, f.mounts, "node01", f.root,
                     [](const std::string&) { return std::optional<io::FsSpace>(); });
  EXPECT_TRUE(p.mounted);
  EXPECT_FALSE(p.space);
  EXPECT_NE(p.summary.find("capacity unknown (statvfs: "), std::string::npos) << p.summary;
}

TEST(TierMedia, FromTheDisksBelow) {
  io::ScratchDevice d;
  d.fs_type = "xfs";
  io::Disk nvme;
  nvme.nvme = true, nvme.transport = "pcie", nvme.rotational = false;
  io::Disk sas;
  sas.transport = "sas", sas.rotational = false;
  io::Disk hdd;
  hdd.transport = "sata", hdd.rotational = true;
  io::Disk tcp;
  tcp.nvme = true, tcp.transport = "tcp";
  d.disks = {nvme};
  EXPECT_EQ(io::tier_media(d, false), "nvme");
  d.disks = {sas, sas};
  EXPECT_EQ(io::tier_media(d, false), "ssd (sas)");
  d.disks = {hdd, sas};
  EXPECT_EQ(io::tier_media(d, false), "hdd (sata)+ssd (sas)");
  d.disks = {tcp};
  EXPECT_EQ(io::tier_media(d, false), "nvme over tcp");
  io::Disk vda;
  vda.subsystem = "virtio", vda.transport = "virtio", vda.rotational = true;
  d.disks = {vda};
  EXPECT_EQ(io::tier_media(d, false), "virtual disk (virtio)");  // not an HDD for saying so
  d.disks = {};
  d.reason = "no sysfs";
  EXPECT_EQ(io::tier_media(d, false), "unknown (no sysfs)");
  d.fs_type = "tmpfs";
  EXPECT_EQ(io::tier_media(d, false), "memory (tmpfs)");
  d.fs_type = "lustre";
  EXPECT_EQ(io::tier_media(d, true), "network (lustre)");
}

TEST(DataFilesystems, BlockAndNetworkOnlyOnePerDevice) {
  const std::string root = temp_dir("found");
  std::vector<io::Mount> mounts = {
      {"/", "ext4", "/dev/vda1", "rw,relatime", "254:1"},
      {"/proc", "proc", "proc", "rw", "0:22"},
      {"/tmp", "tmpfs", "tmpfs", "rw", "0:30"},
      {"/etc/hosts", "ext4", "/dev/vda1", "rw", "254:1"},  // a bind mount of /'s filesystem
      {"/boot/efi", "vfat", "/dev/vda15", "rw", "254:15"},
      {"/snap/core/1", "squashfs", "/dev/loop0", "ro", "7:0"},
      {"/mnt/ro", "ext4", "/dev/sdb1", "ro,noatime", "8:17"},
      {"/data", "xfs", "/dev/md0", "rw", "9:0"},
      {"/shared", "nfs4", "filer:/x", "rw", "0:60"},
  };
  auto found = io::data_filesystems(mounts, root, fixed_space(2, 1));
  std::vector<std::string> points;
  for (const auto& f : found) points.push_back(f.mount_point);
  EXPECT_EQ(points, (std::vector<std::string>{"/", "/data", "/shared"}));
  EXPECT_EQ(found[2].media, "network (nfs4)");
  ASSERT_TRUE(found[1].space);
  EXPECT_DOUBLE_EQ(found[1].space->capacity_tb, 2);
}

// --- rows: select.distinct and extra.unmeasured ---------------------------------------------

ResultRecord tier_record(const std::string& host, std::optional<double> tb, const std::string& id,
                         const json& unmeasured = json::object()) {
  ResultRecord r;
  r.benchmark = "io.tiers";
  r.params = {{"tier", "hot"}};
  r.scope.kind = ScopeKind::node, r.scope.host = host;
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  if (tb) r.metrics.push_back({"capacity_tb", *tb, "TB", true});
  r.extra = {{"tier", {{"filesystem_id", id}}}, {"unmeasured", unmeasured}};
  return r;
}

Spec capacity_spec(const std::string& name, bool distinct) {
  json select = {
      {"benchmark", "io.tiers"}, {"params", {{"tier", "hot"}}}, {"metric", "capacity_tb"}};
  if (distinct) select["distinct"] = "/extra/tier/filesystem_id";
  json row = {{"id", "t.capacity"}, {"title", "t"},     {"source", "test"},
              {"severity", "fail"}, {"select", select}, {"scope", "cluster"},
              {"aggregate", "sum"}, {"op", ">="},       {"value", 100},
              {"unit", "TB"}};
  const std::string dir = temp_dir("rows-" + name);
  return load_spec(
      write(dir, "t.json", {{"schema", kSpecSchema}, {"name", name}, {"requirements", {row}}}));
}

report::Report capacity_report(const std::vector<ResultRecord>& recs, bool distinct) {
  RunDir run = read_run_dir(std::string(CB_FIXTURES) + "/results/cpu-pass");
  run.run.plan.clear();
  run.records.records = recs;
  return report::make_report(run, capacity_spec(distinct ? "d" : "all", distinct));
}

TEST(TierRows, ASharedFilesystemCountsOnceALocalOneIsSummed) {
  std::vector<ResultRecord> recs = {tier_record("node01", 60, "shared:nfs4:filer:/hot"),
                                    tier_record("node02", 60, "shared:nfs4:filer:/hot"),
                                    tier_record("node03", 60, "shared:nfs4:filer:/hot")};
  report::Report once = capacity_report(recs, true);
  EXPECT_EQ(once.rows.at(0).outcome, report::kFail);
  EXPECT_EQ(once.rows.at(0).value, 60.0);
  EXPECT_NE(once.rows.at(0).message.find(
                "2 more record(s) of the same /extra/tier/filesystem_id counted once"),
            std::string::npos)
      << once.rows.at(0).message;
  EXPECT_EQ(capacity_report(recs, false).rows.at(0).value, 180.0);  // without distinct
  std::vector<ResultRecord> local = {tier_record("node01", 60, "local:node01:259:1"),
                                     tier_record("node02", 60, "local:node02:259:1")};
  report::Report summed = capacity_report(local, true);
  EXPECT_EQ(summed.rows.at(0).outcome, report::kPass);
  EXPECT_EQ(summed.rows.at(0).value, 120.0);
}

TEST(TierRows, ASumWithAnUnknownAddendIsNotCalledShort) {
  const json io_error = {{"capacity_tb", "statvfs: Input/output error"}};
  report::Report shortfall = capacity_report({tier_record("node01", 60, "local:node01:259:1"),
                                              tier_record("node02", std::nullopt, "", io_error)},
                                             true);
  EXPECT_EQ(shortfall.rows.at(0).outcome, report::kMissing);
  EXPECT_EQ(
      shortfall.rows.at(0).message,
      "cluster: the sum 60 TB on cluster (below 100 TB) leaves out what could not be measured: "
      "node02: statvfs: Input/output error");
  report::Report enough = capacity_report({tier_record("node01", 120, "local:node01:259:1"),
                                           tier_record("node02", std::nullopt, "", io_error)},
                                          true);
  EXPECT_EQ(enough.rows.at(0).outcome, report::kPass);  // more can only add to it
  EXPECT_NE(
      enough.rows.at(0).message.find("not counted (unknown): node02: statvfs: Input/output error"),
      std::string::npos)
      << enough.rows.at(0).message;
  // A node where the tier is not mounted records no capacity and no reason for it: not unknown.
  report::Report absent = capacity_report(
      {tier_record("node01", 60, "local:node01:259:1"), tier_record("node02", std::nullopt, "")},
      true);
  EXPECT_EQ(absent.rows.at(0).outcome, report::kFail);
}

TEST(TierRows, ARecordWithoutTheMetricSaysWhy) {
  report::Report r =
      capacity_report({tier_record("node01", std::nullopt, "x",
                                   {{"capacity_tb", "not mounted: /mnt/hot does not exist"}})},
                      true);
  EXPECT_EQ(r.rows.at(0).outcome, report::kMissing);
  EXPECT_EQ(r.rows.at(0).message,
            "cluster: record io.tiers|{\"tier\":\"hot\"}|node01 has no metric 'capacity_tb': not "
            "mounted: /mnt/hot does not exist");
}

}  // namespace
}  // namespace clusterbench
