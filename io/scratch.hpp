// Where io benchmarks may write: the scratch directory, its filesystem, free space, and cleanup
// (docs/fio.md "Safety"). Nothing here writes outside a directory it created itself.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/watchdog.hpp"
#include "records/records.hpp"

namespace clusterbench::io {

/// One line of /proc/self/mountinfo (proc(5)): mount point, filesystem type, source, options.
struct Mount {
  std::string mount_point, fs_type, source, options;
};

/// Parses /proc/self/mountinfo text; octal escapes (\040) in paths are decoded. Malformed lines
/// are skipped.
std::vector<Mount> parse_mountinfo(const std::string& text);

/// Reads `fs_root`/proc/self/mountinfo; empty when it cannot be read.
std::vector<Mount> read_mountinfo(const std::string& fs_root = "/");

/// The mount holding `path` (longest mount-point prefix), or nullptr.
const Mount* mount_of(const std::string& path, const std::vector<Mount>& mounts);

/// True for network and cluster filesystems (nfs, nfs4, cifs, smb3, ceph, lustre, gpfs, beegfs,
/// glusterfs, 9p, fuse.sshfs, ...): never a default scratch target.
bool is_network_fs(const std::string& fs_type);

/// The default scratch directory and why it was chosen.
struct ScratchChoice {
  std::string dir;
  std::string reason;
};

/// Picks the default scratch directory: the writable local mount on an NVMe device of the
/// inventory (`devices` with nvme=true; a mount's source /dev/nvme0n1 or /dev/nvme0n1p2) with the
/// most free bytes (`free_bytes(dir)`), else `tmpdir`. Network filesystems are never chosen.
ScratchChoice default_scratch(const std::vector<BlockDevice>& devices,
                              const std::vector<Mount>& mounts, const std::string& tmpdir,
                              const std::function<long long(const std::string&)>& free_bytes);

/// The system's temporary directory: $TMPDIR, else /tmp.
std::string system_tmpdir();

/// Bytes available to this user on the filesystem of `dir` (statvfs f_bavail x f_frsize);
/// -1 when statvfs fails.
long long free_bytes(const std::string& dir);

/// A directory this process created below `parent` (mkdtemp "cb-<tag>-XXXXXX"), removed with
/// everything in it when destroyed: on success and on failure alike. Throws CallError when the
/// directory cannot be created.
class ScratchDir {
 public:
  ScratchDir(const std::string& parent, const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<AbortCleanup> remove_on_abort_;  // the run may end without destructors
};

/// Filesystem or partition-table signature in the first bytes of a block device (blkid's magics:
/// MBR 0x55AA at 510, GPT "EFI PART" at 512, ext2/3/4 0xEF53 at 1080, XFS "XFSB" at 0, btrfs
/// "_BHRfS_M" at 65600, swap "SWAPSPACE2" at 4086, LUKS at 0, LVM2 "LABELONE" at 512).
/// `head` holds the device's first bytes (at least 68 KiB to see btrfs). Empty when none.
std::string block_signature(const std::string& head);

/// Why a raw block device may not be a destructive fio target, or "" when it may:
/// `allowed` false (--set io.fio.allow_destructive_device=true is needed), not a block device,
/// mounted (it or a partition is a mount source), has partitions (sysfs `holders`/partitions
/// below /sys/class/block/NAME), or holds a signature (block_signature).
std::string raw_device_refusal(const std::string& device, bool allowed,
                               const std::vector<Mount>& mounts, const std::string& fs_root = "/");

/// A process holding a file open for writing.
struct OpenWriter {
  int pid = 0;
  std::string comm;  ///< /proc/PID/comm
  std::string path;  ///< the file, as /proc/PID/fd/N links to it
};

/// Processes other than this one that hold `target` or a file below it open for writing
/// (O_WRONLY or O_RDWR): every `proc_root`/PID/fd/N whose link points there, with the access mode
/// from the "flags:" line (octal) of `proc_root`/PID/fdinfo/N (proc(5)). `target` is compared by
/// its absolute, normalised path. A process whose fd directory cannot be read (another user's,
/// without privilege) is counted in `unreadable` and skipped.
std::vector<OpenWriter> open_writers(const std::string& target, int* unreadable = nullptr,
                                     const std::string& proc_root = "/proc");

/// "pid 4242 (python3) writes /scratch/job/ckpt.bin" lines, joined with "; " (at most 5, then
/// "and N more").
std::string describe_writers(const std::vector<OpenWriter>& writers);

}  // namespace clusterbench::io
