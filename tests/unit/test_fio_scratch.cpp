// Scratch-directory safety: mountinfo parsing, default choice (NVMe, never network), cleanup on
// success and failure, and the raw-device refusals (docs/fio.md "Safety").
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

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

std::vector<BlockDevice> devices() {
  BlockDevice a, b, c, d;
  a.name = "vda";
  b.name = "nvme0n1", b.nvme = true;
  c.name = "nvme1n1", c.nvme = true;
  d.name = "nvme2n1", d.nvme = true;
  return {a, b, c, d};
}
}  // namespace

TEST(Scratch, ParsesMountinfo) {
  auto m = parse_mountinfo(kMountinfo);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[1].mount_point, "/mnt/nvme0");
  EXPECT_EQ(m[1].fs_type, "xfs");
  EXPECT_EQ(m[1].source, "/dev/nvme0n1p1");
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

TEST(Scratch, DefaultIsTheNvmeMountWithMostFreeSpace) {
  auto m = parse_mountinfo(kMountinfo);
  auto free = [](const std::string& d) -> long long {
    if (d == "/mnt/nvme0") return 100;
    if (d == "/mnt/nvme1") return 300;
    if (d == "/mnt/ro nvme") return 900;  // read-only: never chosen
    return 5000;                          // "/" (vda) and the network mounts: not NVMe
  };
  auto c = default_scratch(devices(), m, "/tmp", free);
  EXPECT_EQ(c.dir, "/mnt/nvme1");
  EXPECT_NE(c.reason.find("/dev/nvme1n1"), std::string::npos);
  // Without NVMe devices in the inventory: the temporary directory, never the NFS mount.
  auto t = default_scratch({devices()[0]}, m, "/var/tmp", free);
  EXPECT_EQ(t.dir, "/var/tmp");
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
