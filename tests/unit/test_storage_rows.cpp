// The storage rows say what was measured (issue 19, item 5): select.require / unmet / describe
// (loaded by bench/records/spec.cpp, judged by reports/rows.cpp), over io.fio records whose
// extra.scratch_device comes from io/scratch.hpp on the fixture tree
// tests/fixtures/fsroot-scratch/node (make_scratch_fixture.py), judged by the seed's own table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/scratch.hpp"
#include "reports/render.hpp"
#include "reports/report.hpp"

namespace clusterbench::report {
namespace {

const std::string kNode = std::string(CB_FIXTURES) + "/fsroot-scratch/node";
const std::string kSeedSpec = std::string(CB_SOURCE_DIR) + "/reports/specs/cpu-node.json";

const std::string kUnmetTail =
    "; that is not a local NVMe drive (NVMe on PCIe), so it is not judged against the NVMe data "
    "sheet: pass --set io.fio.scratch=/path/on/nvme";

/// extra.scratch_device of a directory of the fixture node, as io.fio records it.
json device_on_node(const std::string& dir) {
  return io::scratch_device_json(io::scratch_device(dir, io::read_mountinfo(kNode), kNode));
}

/// An ok io.fio record of `profile` on `host` with one metric, its scratch on `dir` of the
/// fixture node ("" leaves extra.scratch_device out, as records before it).
ResultRecord fio_record(const std::string& host, const std::string& profile,
                        const std::string& metric, double value, const std::string& unit,
                        const std::string& dir) {
  ResultRecord r;
  r.run_id = "20261130T084500Z-node01";
  r.benchmark = "io.fio";
  r.params = {{"profile", profile}};
  r.scope.kind = ScopeKind::node, r.scope.host = host;
  r.case_key = make_case_key(r.benchmark, r.params, r.scope);
  r.metrics.push_back({metric, value, unit, true});
  if (!dir.empty()) r.extra = {{"scratch", dir}, {"scratch_device", device_on_node(dir)}};
  return r;
}

/// The cpu-pass fixture's env (node01 and node02) with `records` instead of its own.
RunDir run_with(std::vector<ResultRecord> records) {
  RunDir run = read_run_dir(std::string(CB_FIXTURES) + "/results/cpu-pass");
  run.run.plan.clear();
  run.records.records = std::move(records);
  return run;
}

const RowResult& row_of(const Report& r, const std::string& id) {
  for (const auto& row : r.rows)
    if (row.req.id == id) return row;
  throw std::runtime_error("no row " + id);
}

const ItemResult& item_of(const RowResult& row, const std::string& item) {
  for (const auto& it : row.items)
    if (it.item == item) return it;
  throw std::runtime_error("no item " + item);
}

// --- the seed's storage rows ---------------------------------------------------------------------

TEST(StorageRows, NvmeScratchIsJudgedAndTheMessageNamesTheDrive) {
  Report r =
      make_report(run_with({fio_record("node01", "seq_read", "read_bw", 6.5, "GB/s", "/mnt/nvme0"),
                            fio_record("node02", "seq_read", "read_bw", 5.9, "GB/s", "/data")}),
                  load_spec(kSeedSpec));
  const RowResult& row = row_of(r, "storage.nvme_seq_read");
  EXPECT_EQ(row.outcome, kFail);  // node02's 5.9 GB/s, on NVMe, is judged and fails
  const std::string nvme0 =
      "nvme0n1 (NVMe pcie, non-rotational, model SAMSUNG MZQL23T8HCLS-00A07, serial "
      "S64HNE0R100000), xfs on /mnt/nvme0 via nvme0n1p1";
  const ItemResult& a = item_of(row, "node01");
  EXPECT_EQ(a.outcome, kPass);
  EXPECT_EQ(a.message, "6.5 GB/s on node01 (at least 6.2 GB/s); measured on " + nvme0);
  EXPECT_EQ(a.measured, "measured on " + nvme0);
  const ItemResult& b = item_of(row, "node02");
  EXPECT_EQ(b.outcome, kFail);
  EXPECT_EQ(b.message,
            "5.9 GB/s on node02 (below 6.2 GB/s); measured on nvme1n1 (NVMe pcie, non-rotational, "
            "model SAMSUNG MZQL23T8HCLS-00A07, serial S64HNE0R100001), ext4 on /data via dm-0");
  EXPECT_EQ(row.message, b.message + "; 2 items: 1 FAIL, 1 PASS");
  EXPECT_EQ(row.measured, b.measured);
}

TEST(StorageRows, NonNvmeScratchIsMissingWithWhereFioRanAndWhatToPass) {
  Report r =
      make_report(run_with({fio_record("node01", "seq_read", "read_bw", 1.2, "GB/s", "/var/tmp"),
                            fio_record("node02", "seq_read", "read_bw", 0.9, "GB/s", "/mnt/sata")}),
                  load_spec(kSeedSpec));
  const RowResult& row = row_of(r, "storage.nvme_seq_read");
  EXPECT_EQ(row.outcome, kMissing);  // never FAIL against the NVMe data sheet
  EXPECT_EQ(item_of(row, "node01").message,
            "node01: not judged: fio ran on /var/tmp: vda (virtio, rotational, model unknown, "
            "serial QM00001), ext4 on / via vda1" +
                kUnmetTail);
  EXPECT_EQ(item_of(row, "node02").outcome, kMissing);
  EXPECT_EQ(item_of(row, "node02").message,
            "node02: not judged: fio ran on /mnt/sata: sda (sata, non-rotational, model Samsung "
            "SSD 870, serial unknown), ext4 on /mnt/sata via sda1" +
                kUnmetTail);
  EXPECT_TRUE(row.measured.empty());
  // A MISSING fail-severity row: the acceptance is incomplete (exit 4), not failed (1).
  for (const auto& f : r.rows) EXPECT_NE(f.outcome, kFail) << f.req.id << ": " << f.message;
  EXPECT_EQ(r.exit_code, 4);
}

TEST(StorageRows, RemoteNvmeTmpfsAndOldRecordsAreNotJudged) {
  Report r = make_report(
      run_with({fio_record("node01", "rand_read", "read_iops", 2e6, "IOPS", "/mnt/fabric"),
                fio_record("node02", "rand_read", "read_iops", 2e6, "IOPS", "/tmp/x"),
                fio_record("node01", "seq_write", "write_bw", 9, "GB/s", "")}),
      load_spec(kSeedSpec));
  const RowResult& iops = row_of(r, "storage.nvme_rand_read_iops");
  EXPECT_EQ(item_of(iops, "node01").outcome, kMissing);
  EXPECT_EQ(item_of(iops, "node01").message,
            "node01: not judged: fio ran on /mnt/fabric: nvme4n1 (NVMe tcp, non-rotational, model "
            "Linux, serial a1b2c3d4e5f60718), xfs on /mnt/fabric" +
                kUnmetTail);
  EXPECT_EQ(item_of(iops, "node02").message,
            "node02: not judged: fio ran on /tmp/x: no block device (tmpfs tmpfs is not on a "
            "block device), tmpfs on /tmp" +
                kUnmetTail);
  // A record from before extra.scratch_device cannot say what it measured.
  const RowResult& write = row_of(r, "storage.nvme_seq_write");
  EXPECT_EQ(item_of(write, "node01").outcome, kMissing);
  EXPECT_EQ(item_of(write, "node01").message,
            "node01: not judged: record io.fio|{\"profile\":\"seq_write\"}|node01 has no "
            "/extra/scratch_device/nvme (select.require; a record written before it was "
            "recorded?)");
}

TEST(StorageRows, FailedAndWaivedRecordsAreJudgedAsBefore) {
  ResultRecord failed = fio_record("node01", "seq_read", "read_bw", 0, "GB/s", "");
  failed.status = Status::failed, failed.metrics.clear();
  failed.message = "No space left on device in job 'seq_read'";
  ResultRecord waived = fio_record("node02", "seq_read", "read_bw", 0, "GB/s", "");
  waived.status = Status::waived, waived.metrics.clear();
  waived.message = "fio not found (looked for 'fio' on PATH)";
  Report r = make_report(run_with({failed, waived}), load_spec(kSeedSpec));
  const RowResult& row = row_of(r, "storage.nvme_seq_read");
  EXPECT_EQ(item_of(row, "node01").outcome, kFail);
  EXPECT_EQ(item_of(row, "node01").message,
            "node01: failed: No space left on device in job 'seq_read'");
  EXPECT_EQ(item_of(row, "node02").outcome, kWaived);
}

TEST(StorageRows, ReportMdAndJsonNameTheDriveOfAPassingRow) {
  Report r = make_report(
      run_with({fio_record("node01", "seq_read", "read_bw", 6.5, "GB/s", "/raid"),
                fio_record("node02", "seq_read", "read_bw", 6.6, "GB/s", "/mnt/mpath")}),
      load_spec(kSeedSpec));
  const RowResult& row = row_of(r, "storage.nvme_seq_read");
  ASSERT_EQ(row.outcome, kPass);
  const std::string raid =
      "measured on nvme2n1 (NVMe pcie, non-rotational, model SAMSUNG MZQL27T6HBLA-00A07, serial "
      "S64HNE0R100002) + nvme3n1 (NVMe pcie, non-rotational, model SAMSUNG MZQL27T6HBLA-00A07, "
      "serial S64HNE0R100003), ext4 on /raid via md0";
  EXPECT_EQ(row.worst_item, "node01");
  EXPECT_EQ(row.measured, raid);
  std::string md = render_markdown(r);
  EXPECT_NE(md.find("- `storage.nvme_seq_read` on node01: " + raid + "\n"), std::string::npos)
      << md.substr(0, 4000);
  json j = render_json(r);
  for (const auto& jr : j["rows"])
    if (jr["id"] == "storage.nvme_seq_read") {
      EXPECT_EQ(jr["items"][0]["measured"], raid);
      EXPECT_EQ(jr["items"][1]["measured"],
                "measured on nvme7n1 (NVMe pcie, non-rotational, model SAMSUNG "
                "MZWLO3T8HCLS-00A07, serial S7MPATH0000001), xfs on /mnt/mpath");
    } else {
      for (const auto& it : jr["items"]) EXPECT_FALSE(it.contains("measured")) << jr["id"];
    }
}

TEST(StorageRows, LocalNvmeCountsNvmeDrivesOnly) {
  RunDir run = run_with({});
  Report pass = make_report(run, load_spec(kSeedSpec));
  const RowResult& ok = row_of(pass, "host.local_nvme");
  EXPECT_EQ(ok.outcome, kPass);  // each node has a 3.84 TB nvme0n1
  EXPECT_EQ(ok.message, "count 1 on node01 (at least 1); 2 items: 2 PASS");
  // A 7.68 TB SATA disk is not a local NVMe drive, nor a 1.92 TB NVMe one.
  run.run.env[1].block_devices = {{"sda", "", "", "", 7.68, false, false},
                                  {"nvme0n1", "", "", "", 1.92, true, false}};
  Report fail = make_report(run, load_spec(kSeedSpec));
  const RowResult& row = row_of(fail, "host.local_nvme");
  EXPECT_EQ(row.outcome, kFail);
  EXPECT_EQ(item_of(row, "node02").message, "count 0 on node02 (below 1)");
}

}  // namespace
}  // namespace clusterbench::report
