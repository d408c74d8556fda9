// Scratch-directory safety: mountinfo parsing, the device under a directory as sysfs describes it
// and the default choice (local NVMe found by sysfs, never network) on the fixture tree
// tests/fixtures/fsroot-scratch/node, cleanup on success and failure, and the raw-device refusals
// (docs/fio.md "Safety" and "What was measured").
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "io/fio_options.hpp"
#include "io/scratch.hpp"

using namespace clusterbench;
using namespace clusterbench::io;
namespace fs = std::filesystem;

namespace {
// Lines in /proc/self/mountinfo's format (proc(5)); the NFS one has two optional fields.
const char* kMountinfo =
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "30 22 259:2 / /mnt/nvme0 rw,noatime shared:5 - xfs /dev/nvme0n1p1 rw,attr2\n"
    "31 22 259:5 / /mnt/nvme1 rw,noatime shared:6 - ext4 /dev/nvme1n1 rw\n"
    "32 22 259:7 / /mnt/ro\\040nvme ro,noatime shared:7 - ext4 /dev/nvme2n1 ro\n"
    "40 22 0:50 / /mnt/shared rw,relatime shared:9 master:2 - nfs4 server:/export rw,vers=4.2\n"
    "41 22 0:51 / /mnt/lustre rw shared:10 - lustre 10.0.0.1@o2ib:/fs rw\n";

// tests/fixtures/fsroot-scratch/node (make_scratch_fixture.py): block devices in sysfs's layout.
const std::string kNode = std::string(CB_FIXTURES) + "/fsroot-scratch/node";

std::vector<Mount> node_mounts() { return read_mountinfo(kNode); }

ScratchDevice on_node(const std::string& path) {
  return scratch_device(path, node_mounts(), kNode);
}
}  // namespace

TEST(Scratch, ParsesMountinfo) {
  auto m = parse_mountinfo(kMountinfo);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[1].mount_point, "/mnt/nvme0");
  EXPECT_EQ(m[1].fs_type, "xfs");
  EXPECT_EQ(m[1].source, "/dev/nvme0n1p1");
  EXPECT_EQ(m[1].dev, "259:2");
  EXPECT_EQ(m[4].dev, "0:50");
  EXPECT_EQ(m[3].mount_point, "/mnt/ro nvme");  // \040 decoded
  EXPECT_EQ(m[4].fs_type, "nfs4");              // after two optional fields
  EXPECT_EQ(m[4].source, "server:/export");
  EXPECT_EQ(mount_of("/mnt/nvme0/a/b", m)->mount_point, "/mnt/nvme0");
  EXPECT_EQ(mount_of("/mnt/nvme0x", m)->mount_point, "/");
  EXPECT_EQ(mount_of("/mnt/shared/data", m)->fs_type, "nfs4");
}

TEST(Scratch, NetworkFilesystems) {
  for (const char* t : {"nfs", "nfs4", "cifs", "lustre", "gpfs", "beegfs", "fuse.sshfs", "ceph"})
    EXPECT_TRUE(is_network_fs(t)) << t;
  for (const char* t : {"ext4", "xfs", "tmpfs", "btrfs", "overlay"})
    EXPECT_FALSE(is_network_fs(t)) << t;
}

TEST(ScratchDevice, NvmePartitionIsNamedBySysfs) {
  ScratchDevice d = on_node("/mnt/nvme0/cb-fio-seq_read-x");
  EXPECT_EQ(d.mount_point, "/mnt/nvme0");
  EXPECT_EQ(d.fs_type, "xfs");
  EXPECT_EQ(d.dev, "259:1");
  EXPECT_EQ(d.block_device, "nvme0n1p1");
  ASSERT_EQ(d.disks.size(), 1u);
  const Disk& n = d.disks[0];
  EXPECT_EQ(n.name, "nvme0n1");                      // the partition's parent
  EXPECT_EQ(n.model, "SAMSUNG MZQL23T8HCLS-00A07");  // the kernel's padding trimmed
  EXPECT_EQ(n.serial, "S64HNE0R100000");
  EXPECT_EQ(n.firmware, "GDC5902Q");
  EXPECT_EQ(n.subsystem, "nvme");
  EXPECT_EQ(n.transport, "pcie");
  EXPECT_TRUE(n.nvme);
  EXPECT_EQ(n.rotational, std::optional<bool>(false));
  EXPECT_TRUE(d.local_nvme());
  EXPECT_EQ(d.summary(),
            "nvme0n1 (NVMe pcie, non-rotational, model SAMSUNG MZQL23T8HCLS-00A07, serial "
            "S64HNE0R100000), xfs on /mnt/nvme0 via nvme0n1p1");
}

TEST(ScratchDevice, VirtioRootIsDescribedAsNotNvme) {
  ScratchDevice d = on_node("/var/tmp");
  EXPECT_EQ(d.mount_point, "/");
  ASSERT_EQ(d.disks.size(), 1u);
  EXPECT_EQ(d.disks[0].name, "vda");
  EXPECT_FALSE(d.disks[0].nvme);
  EXPECT_EQ(d.disks[0].subsystem, "virtio");
  EXPECT_EQ(d.disks[0].transport, "virtio");
  EXPECT_EQ(d.disks[0].rotational, std::optional<bool>(true));
  EXPECT_EQ(d.disks[0].serial, "QM00001");  // virtio-blk's own attribute
  EXPECT_EQ(d.disks[0].model, "");
  EXPECT_FALSE(d.local_nvme());
  EXPECT_EQ(d.summary(),
            "vda (virtio, rotational, model unknown, serial QM00001), ext4 on / via vda1");
  json j = scratch_device_json(d);
  EXPECT_EQ(j["path"], "/var/tmp");
  EXPECT_EQ(j["disk"], "vda");
  EXPECT_EQ(j["block_device"], "vda1");
  EXPECT_EQ(j["nvme"], false);
  EXPECT_EQ(j["rotational"], true);
  EXPECT_EQ(j["local_nvme"], false);
  EXPECT_EQ(j["transport"], "virtio");
  EXPECT_TRUE(j["model"].is_null());  // unknown, not ""
  EXPECT_EQ(j["serial"], "QM00001");
  EXPECT_EQ(j["summary"], d.summary());
  EXPECT_FALSE(j.contains("reason"));
}

TEST(ScratchDevice, SataSsdIsScsiOverAta) {
  ScratchDevice d = on_node("/mnt/sata");
  ASSERT_EQ(d.disks.size(), 1u);
  EXPECT_EQ(d.disks[0].name, "sda");
  EXPECT_EQ(d.disks[0].model, "Samsung SSD 870");
  EXPECT_EQ(d.disks[0].firmware, "SVT0");
  EXPECT_EQ(d.disks[0].subsystem, "scsi");
  EXPECT_EQ(d.disks[0].transport, "sata");
  EXPECT_FALSE(d.disks[0].nvme);
  EXPECT_EQ(d.disks[0].rotational, std::optional<bool>(false));
  EXPECT_FALSE(d.local_nvme());
}

TEST(ScratchDevice, LvmAndRaidAreFollowedToTheirDrives) {
  ScratchDevice lvm = on_node("/data/x");
  EXPECT_EQ(lvm.block_device, "dm-0");  // /dev/mapper/vg0-data
  ASSERT_EQ(lvm.disks.size(), 1u);
  EXPECT_EQ(lvm.disks[0].name, "nvme1n1");  // through slaves/nvme1n1p2
  EXPECT_TRUE(lvm.local_nvme());

  ScratchDevice raid = on_node("/raid");
  EXPECT_EQ(raid.block_device, "md0");
  ASSERT_EQ(raid.disks.size(), 2u);
  EXPECT_EQ(raid.disks[0].name, "nvme2n1");
  EXPECT_EQ(raid.disks[1].name, "nvme3n1");
  EXPECT_TRUE(raid.local_nvme());
  json j = scratch_device_json(raid);
  EXPECT_EQ(j["disk"], "nvme2n1+nvme3n1");
  EXPECT_EQ(j["model"], "SAMSUNG MZQL27T6HBLA-00A07");  // one model: named once
  EXPECT_EQ(j["serial"], "S64HNE0R100002+S64HNE0R100003");
  EXPECT_EQ(j["transport"], "pcie");
  EXPECT_EQ(j["nvme"], true);
  EXPECT_EQ(j["rotational"], false);
  ASSERT_EQ(j["disks"].size(), 2u);
  EXPECT_EQ(j["disks"][1]["serial"], "S64HNE0R100003");
}

// The disk whose traffic io.fio's extra.disk_load reads: a partition's or one-disk LVM's whole
// disk (other partitions share it), a RAID's md device itself (its disks see mirrored bytes).
TEST(ScratchDevice, TheLoadDiskIsTheWholeDiskOrTheArray) {
  EXPECT_EQ(load_disk(scratch_device_json(on_node("/mnt/nvme0/cb-fio-seq_read-x"))), "nvme0n1");
  EXPECT_EQ(load_disk(scratch_device_json(on_node("/data/x"))), "nvme1n1");
  EXPECT_EQ(load_disk(scratch_device_json(on_node("/raid"))), "md0");
  EXPECT_EQ(load_disk(json::object()), "");
}

// /proc/diskstats: sectors read (field 6) + sectors written (field 10), x 512 B.
TEST(Scratch, DiskstatsBytesAreSectorsReadAndWrittenTimes512) {
  const std::string text =
      " 259       0 nvme0n1 1000 5 2000 300 4000 7 6000 900 0 1200 1500 0 0 0 0\n"
      " 259       1 nvme0n1p1 10 0 20 3 40 0 60 9 0 12 15\n"
      " 253       0 vda 1 2 3\n";  // truncated: not read
  EXPECT_EQ(diskstats_bytes(text, "nvme0n1"), (2000LL + 6000LL) * 512);
  EXPECT_EQ(diskstats_bytes(text, "nvme0n1p1"), (20LL + 60LL) * 512);
  EXPECT_EQ(diskstats_bytes(text, "vda"), -1);
  EXPECT_EQ(diskstats_bytes(text, "sda"), -1);
  EXPECT_EQ(diskstats_bytes("", "nvme0n1"), -1);
}

TEST(ScratchDevice, FabricsMultipathAndByUuid) {
  ScratchDevice tcp = on_node("/mnt/fabric");
  ASSERT_EQ(tcp.disks.size(), 1u);
  EXPECT_TRUE(tcp.disks[0].nvme);
  EXPECT_EQ(tcp.disks[0].transport, "tcp");
  EXPECT_FALSE(tcp.local_nvme());  // NVMe over TCP is remote storage

  ScratchDevice head = on_node("/mnt/mpath");
  ASSERT_EQ(head.disks.size(), 1u);
  EXPECT_EQ(head.disks[0].name, "nvme7n1");
  EXPECT_EQ(head.disks[0].subsystem, "nvme-subsystem");
  EXPECT_EQ(head.disks[0].transport, "pcie");  // from the subsystem's controller nvme7
  EXPECT_EQ(head.disks[0].model, "SAMSUNG MZWLO3T8HCLS-00A07");
  EXPECT_TRUE(head.local_nvme());

  // btrfs's anonymous 0:45: the source /dev/disk/by-uuid/... names the device.
  ScratchDevice btrfs = on_node("/mnt/btrfs");
  EXPECT_EQ(btrfs.dev, "0:45");
  EXPECT_EQ(btrfs.block_device, "nvme5n1");
  ASSERT_EQ(btrfs.disks.size(), 1u);
  EXPECT_TRUE(btrfs.local_nvme());
}

TEST(ScratchDevice, TmpfsHasNoBlockDevice) {
  ScratchDevice d = on_node("/tmp/cb");
  EXPECT_TRUE(d.disks.empty());
  EXPECT_EQ(d.reason, "tmpfs tmpfs is not on a block device");
  EXPECT_EQ(d.summary(), "no block device (tmpfs tmpfs is not on a block device), tmpfs on /tmp");
  json j = scratch_device_json(d);
  EXPECT_TRUE(j["nvme"].is_null());
  EXPECT_TRUE(j["rotational"].is_null());
  EXPECT_TRUE(j["disk"].is_null());
  EXPECT_EQ(j["local_nvme"], false);
  EXPECT_EQ(j["reason"], d.reason);
  // A device number sysfs does not know is said so.
  std::string bd, why;
  EXPECT_TRUE(disks_of("259:99", kNode, &bd, &why).empty());
  EXPECT_EQ(why, "no block device 259:99 in /sys/dev/block");
}

TEST(Scratch, DefaultIsTheLocalNvmeMountWithMostFreeSpace) {
  auto m = node_mounts();
  ASSERT_EQ(m.size(), 11u);
  std::map<std::string, long long> space = {
      {"/mnt/nvme0", 100}, {"/data", 300},        {"/raid", 200},        {"/mnt/btrfs", 250},
      {"/mnt/mpath", 150}, {"/mnt/fabric", 9000}, {"/mnt/ro", 9500},     {"/mnt/sata", 8000},
      {"/", 5000},         {"/tmp", 7000},        {"/mnt/shared", 99999}};
  auto free = [&](const std::string& d) { return space.at(d); };
  // The LVM volume on NVMe: found by sysfs, not by its name (/dev/mapper/vg0-data). NVMe over
  // TCP, the read-only NVMe, the SATA SSD, vda, tmpfs and NFS have more room and are not taken.
  auto c = default_scratch(m, "/var/tmp", free, kNode);
  EXPECT_EQ(c.dir, "/data");
  EXPECT_NE(c.reason.find("local NVMe nvme1n1 (NVMe pcie"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("ext4 on /data via dm-0"), std::string::npos) << c.reason;
  // Without it: the btrfs mount on /dev/disk/by-uuid/...
  std::erase_if(m, [](const Mount& x) { return x.mount_point == "/data"; });
  EXPECT_EQ(default_scratch(m, "/var/tmp", free, kNode).dir, "/mnt/btrfs");
  // Only mounts that are not local NVMe: the temporary directory.
  std::erase_if(m, [](const Mount& x) {
    return x.mount_point.rfind("/mnt/n", 0) == 0 || x.mount_point == "/raid" ||
           x.mount_point == "/mnt/btrfs" || x.mount_point == "/mnt/mpath";
  });
  ASSERT_EQ(m.size(), 6u);  // /, /tmp, fabric, ro, sata, shared
  auto t = default_scratch(m, "/var/tmp", free, kNode);
  EXPECT_EQ(t.dir, "/var/tmp");
  EXPECT_EQ(t.reason, "no writable local NVMe mount found; the system temporary directory");
}

TEST(Scratch, DirectoryIsRemovedOnSuccessAndOnFailure) {
  std::string parent = fs::temp_directory_path() / ("cbscratch-" + std::to_string(getpid()));
  fs::create_directories(parent);
  std::ofstream(parent + "/keep.txt") << "not ours";
  std::string made;
  {
    ScratchDir d(parent, "unit");
    made = d.path();
    EXPECT_EQ(made.rfind(parent + "/cb-unit-", 0), 0u);
    std::ofstream(made + "/job.0.0") << "data";
    fs::create_directories(made + "/sub");
    std::ofstream(made + "/sub/x") << "y";
  }
  EXPECT_FALSE(fs::exists(made));
  try {
    ScratchDir d(parent, "unit");
    made = d.path();
    std::ofstream(made + "/job.0.0") << "data";
    throw std::runtime_error("fio failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(fs::exists(made));
  // Only our directory went: the file beside it stays.
  EXPECT_TRUE(fs::exists(parent + "/keep.txt"));
  EXPECT_EQ(std::distance(fs::directory_iterator(parent), fs::directory_iterator()), 1);
  fs::remove_all(parent);
}

// A process killed while it holds a scratch directory (kill -9, or mpirun ending the job after
// another rank's MPI_Abort) runs no destructor and no abort cleanup: its guard removes it. A
// released guard leaves the path alone.
TEST(Scratch, GuardRemovesTheDirectoryOfAKilledOwnerOnly) {
  std::string parent = fs::temp_directory_path() / ("cbguard-" + std::to_string(getpid()));
  fs::create_directories(parent + "/released");
  const int released = start_scratch_guard(parent + "/released");
  ASSERT_GE(released, 0);
  release_scratch_guard(released);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t owner = fork();
  if (owner == 0) {
    ScratchDir d(parent, "killed");
    std::ofstream(d.path() + "/job.0.0") << "data";
    const std::string name = d.path();
    if (write(pipefd[1], name.data(), name.size()) < 0) _exit(2);
    pause();  // killed below, with the directory in place
    _exit(0);
  }
  close(pipefd[1]);
  char buf[4096] = {};
  const ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  ASSERT_GT(n, 0);
  const std::string made(buf, static_cast<size_t>(n));
  EXPECT_TRUE(fs::exists(made + "/job.0.0"));
  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  for (int i = 0; i < 200 && fs::exists(made); ++i) usleep(20000);
  EXPECT_FALSE(fs::exists(made)) << made << " outlived its killed owner";
  usleep(100000);  // the released guard has long exited: its path stays
  EXPECT_TRUE(fs::exists(parent + "/released"));
  fs::remove_all(parent);
}

TEST(Scratch, BlockSignatures) {
  std::string zero(70 * 1024, '\0');
  EXPECT_EQ(block_signature(zero), "");
  auto with = [&](size_t off, const std::string& magic) {
    std::string h = zero;
    h.replace(off, magic.size(), magic);
    return block_signature(h);
  };
  EXPECT_EQ(with(1080, "\x53\xef"), "ext2/3/4");
  EXPECT_EQ(with(0, "XFSB"), "xfs");
  EXPECT_EQ(with(65600, "_BHRfS_M"), "btrfs");
  EXPECT_EQ(with(4086, "SWAPSPACE2"), "swap");
  EXPECT_EQ(with(512, "EFI PART"), "GPT partition table");
  EXPECT_EQ(with(510, "\x55\xaa"), "MBR partition table");
  EXPECT_EQ(with(512, "LABELONE"), "LVM2_member");
}

TEST(Scratch, RawDeviceRefusals) {
  auto m = parse_mountinfo(kMountinfo);
  // Not allowed without the explicit knob, whatever the device.
  EXPECT_NE(raw_device_refusal("/dev/nvme9n1", false, m).find("allow_destructive_device=true"),
            std::string::npos);
  // Not a block device.
  EXPECT_NE(raw_device_refusal("/etc/hostname", true, m).find("is not a block device"),
            std::string::npos);
  // A mounted device (a loop device is not needed: the mount table says so first). Only run
  // where the root filesystem's source is a block device of this machine.
  for (const auto& mt : read_mountinfo()) {
    if (mt.mount_point != "/" || mt.source.rfind("/dev/", 0) != 0) continue;
    if (access(mt.source.c_str(), R_OK) != 0) continue;
    std::string why = raw_device_refusal(mt.source, true, read_mountinfo());
    EXPECT_NE(why.find("is mounted"), std::string::npos) << why;
  }
}

namespace {

/// A pid that ran and is gone: a child that exited and was reaped.
pid_t dead_pid() {
  pid_t p = fork();
  if (p == 0) _exit(0);
  int status = 0;
  waitpid(p, &status, 0);
  return p;
}

}  // namespace

TEST(Scratch, OwnerFileNamesThisProcess) {
  const std::string line = scratch_owner_line();
  EXPECT_EQ(
      line.rfind("pid=" + std::to_string(getpid()) + " host=" + scratch_host() + " start=", 0), 0u)
      << line;
  EXPECT_GT(line.size(), line.find("start=") + 6) << "no start time: " << line;
  EXPECT_FALSE(scratch_owner_gone(line, scratch_host()));
  EXPECT_FALSE(scratch_owner_gone(line, "other-host"));
  const std::string dead = "pid=" + std::to_string(dead_pid()) + " host=h start=5";
  EXPECT_TRUE(scratch_owner_gone(dead, "h"));
  EXPECT_FALSE(scratch_owner_gone(dead, "another"));  // another host's pid means nothing here
  // Our pid with another start time: the pid was reused, the owner is gone.
  EXPECT_TRUE(scratch_owner_gone("pid=" + std::to_string(getpid()) + " host=h start=1", "h"));
  EXPECT_FALSE(scratch_owner_gone("garbage", "h"));
  // The pid namespace: ours is named, and a dead pid of another namespace is not called gone.
  const std::string ns = scratch_pid_namespace();
  ASSERT_FALSE(ns.empty());
  EXPECT_NE(line.find(" pidns=" + ns), std::string::npos) << line;
  EXPECT_TRUE(scratch_owner_gone(dead + " pidns=" + ns, "h"));
  EXPECT_FALSE(scratch_owner_gone(dead + " pidns=1" + ns, "h"));
}

TEST(Scratch, SweepRemovesOnlyDeadOwnersOfThisHost) {
  std::string parent = fs::temp_directory_path() / ("cbsweep-" + std::to_string(getpid()));
  fs::remove_all(parent);
  fs::create_directories(parent);
  auto make = [&](const std::string& name, const std::string& owner) {
    fs::create_directories(parent + "/" + name);
    std::ofstream(parent + "/" + name + "/data") << "x";
    if (!owner.empty()) std::ofstream(parent + "/" + name + "/" + kScratchOwnerFile) << owner;
  };
  const std::string dead = "pid=" + std::to_string(dead_pid()) + " host=here start=7\n";
  make("cb-fio-seq_read-dead", dead);
  make("cb-dataset-dead", dead);
  make("cb-fio-live", scratch_owner_line());
  make("cb-fio-other", "pid=" + std::to_string(dead_pid()) + " host=there start=7\n");
  make("cb-fio-noowner", "");
  make("not-ours", dead);
  fs::create_directories(parent + "/target");
  std::ofstream(parent + "/target/" + kScratchOwnerFile) << dead;
  fs::create_directory_symlink(parent + "/target", parent + "/cb-fio-link");
  auto removed = sweep_dead_scratch(parent, "here");
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{parent + "/cb-dataset-dead",
                                               parent + "/cb-fio-seq_read-dead"}));
  for (const char* kept :
       {"cb-fio-live", "cb-fio-other", "cb-fio-noowner", "not-ours", "target", "cb-fio-link"})
    EXPECT_TRUE(fs::exists(fs::symlink_status(parent + "/" + kept))) << kept;
  EXPECT_TRUE(fs::exists(parent + "/target/" + kScratchOwnerFile));
  // ScratchDir sweeps its parent before it makes its own directory, which names its owner.
  make("cb-fio-dead2",
       "pid=" + std::to_string(dead_pid()) + " host=" + scratch_host() + " start=7");
  {
    ScratchDir d(parent, "unit");
    std::ifstream in(d.path() + "/" + kScratchOwnerFile);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, scratch_owner_line());
  }
  EXPECT_FALSE(fs::exists(parent + "/cb-fio-dead2"));
  fs::remove_all(parent);
}

TEST(Scratch, FioPathRefusal) {
  EXPECT_EQ(fio_path_refusal("/mnt/scratch/dir", "x"), "");
  EXPECT_EQ(fio_path_refusal("/tmp/victim.dat:x", "--set io.fio.device"),
            "refused: --set io.fio.device '/tmp/victim.dat:x' holds ':', which fio reads specially "
            "(it splits file and directory names on ':', so another file would be written); "
            "choose a path without it");
  for (const char* bad : {"/a$b", "/a;b", "/a#b", "/a\\b", "/a\nfilename=/x", " /a", "/a ", ""})
    EXPECT_NE(fio_path_refusal(bad, "x"), "") << bad;
}

TEST(Scratch, JobFileTargets) {
  auto t = job_file_targets(
      "; filename=/commented\n[global]\ndirectory=${CB_FIO_DIR}\n[a]\n  filename = /dev/sdb \n"
      "filename_format=/x/$jobnum\n# opendir=/no\nopendir=/y\ninclude other.fio\nrw=write\n");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].key, "directory");
  EXPECT_EQ(t[0].value, "${CB_FIO_DIR}");
  EXPECT_EQ(t[0].line, 3);
  EXPECT_EQ(t[1].key, "filename");
  EXPECT_EQ(t[1].value, "/dev/sdb");
  EXPECT_EQ(t[2].key, "filename_format");
  EXPECT_EQ(t[3].key, "opendir");
  EXPECT_EQ(t[4].key, "include");
  EXPECT_EQ(t[4].value, "other.fio");
}

// Issue 46: a job file's options on an allow-list. The shipped profiles pass; an option that runs
// a command or writes elsewhere, an engine that is not plain I/O, and a variable clusterbench does
// not set are each refused naming the file, the line and the option.
TEST(Scratch, JobOptionsOnAnAllowList) {
  for (const char* p :
       {"seq_read", "seq_write", "rand_read", "rand_write", "mixed_7030", "checkpoint_write"}) {
    std::ifstream in(std::string(CB_SOURCE_DIR) + "/io/profiles/" + p + ".fio");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << p;
    EXPECT_EQ(job_option_refusal(p, text), "") << p;
  }
  const std::string head = "[global]\nioengine=libaio\ndirectory=${CB_FIO_DIR}\n[a]\nrw=write\n";
  EXPECT_EQ(job_option_refusal("j.fio",
                               head + "time_based\n; exec_prerun=x\nfilename_format=f.$jobnum\n"),
            "");
  const std::string exec = job_option_refusal("j.fio", head + "exec_prerun = dd of=/dev/sdb\n");
  EXPECT_EQ(exec.rfind("refused: j.fio line 6 'exec_prerun = dd of=/dev/sdb': option "
                       "'exec_prerun' is not on the allow-list",
                       0),
            0u)
      << exec;
  for (const char* bad : {"exec_postrun=rm -rf /", "write_iolog=/etc/passwd", "write_bw_log=/x",
                          "per_job_logs=0", "ioscheduler=none", "allow_mounted_write=1",
                          "trim_percentage=100", "program=/bin/sh", "daemonize=1"})
    EXPECT_NE(job_option_refusal("j.fio", head + bad + "\n"), "") << bad;
  EXPECT_NE(job_option_refusal("j.fio", "[a]\nioengine=exec\n").find("ioengine 'exec' is not"),
            std::string::npos);
  EXPECT_NE(job_option_refusal("j.fio", "[a]\nioengine=net\n"), "");
  EXPECT_NE(job_option_refusal("j.fio", "[a]\n${EVIL}\n").find("expands ${EVIL}, which"),
            std::string::npos);
  EXPECT_NE(job_option_refusal("j.fio", "[a]\nsize=${HOME}\n"), "");
}
