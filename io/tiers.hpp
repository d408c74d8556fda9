// io.tiers: the spec table's storage tiers (hot, warm, cold) on every node: what is mounted at
// each tier's path, its capacity and media, and fio's sequential and checkpoint throughput there
// (docs/fio.md "Storage tiers", docs/specs.md "Storage tiers").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/scratch.hpp"

namespace clusterbench::io {

/// A tier as one node is asked to measure it.
struct TierDecl {
  std::string name;            ///< hot | warm | cold
  std::string path;            ///< as given: an absolute path
  std::string origin;          ///< "--set io.tiers.hot" or "spec table NAME (tiers.hot)"
  std::optional<bool> shared;  ///< unset: shared when on a network filesystem
  bool mount_point = true;     ///< the path must be a mount point of its own
};

/// Capacity and free space of a filesystem in TB (1e12 B): statvfs f_blocks and f_bavail, each
/// times f_frsize. nullopt when statvfs fails.
struct FsSpace {
  double capacity_tb = 0, free_tb = 0;
};
using SpaceOf = std::function<std::optional<FsSpace>(const std::string& dir)>;

/// statvfs of `dir` as FsSpace; nullopt (errno kept) when it fails.
std::optional<FsSpace> statvfs_space(const std::string& dir);

/// What a node has at a tier's path.
struct TierProbe {
  bool mounted = false;
  bool known = true;      ///< false: the path could not be examined (EACCES, EIO): mounted unknown
  std::string reason;     ///< why it is not mounted, or why its capacity is unknown
  std::string real_path;  ///< the path with its symlinks resolved ("" when it does not exist)
  ScratchDevice device;   ///< the filesystem holding it and the disks below
  bool network = false;   ///< a network or cluster filesystem (is_network_fs)
  bool shared = false;    ///< counted once for the cluster
  /// Identifies the filesystem across nodes: "shared:FSTYPE:SOURCE" (the same on every node
  /// that mounts it) or "local:HOST:MAJ:MIN" (each node's own).
  std::string filesystem_id;
  std::string media;  ///< tier_media(device, network)
  std::optional<FsSpace> space;
  std::string summary;  ///< one line for people
};

/// The media behind a filesystem: "network (nfs4)", "memory (tmpfs)", "nvme", "nvme over tcp",
/// "ssd (sas)", "hdd (sata)", "hdd (virtio)", "unknown (why)". A disk is an SSD when sysfs says
/// it is not rotational; several disks of different kinds are joined with "+".
std::string tier_media(const ScratchDevice& d, bool network);

/// Probes tier `t` on host `host`: the path must exist as a directory and, when
/// `t.mount_point`, be a mount point of its own (else it is "not mounted", with the reason).
/// Paths and /sys are read below `fs_root`; `space` reads the capacity.
TierProbe probe_tier(const TierDecl& t, const std::vector<Mount>& mounts, const std::string& host,
                     const std::string& fs_root, const SpaceOf& space);

/// Runs `work` in a forked child and returns its JSON, or nullopt when the child has not
/// answered within `seconds` (it is killed, and dies when the filesystem wait that holds it
/// ends), or a null json when it failed. For every step that may wait on a tier's filesystem.
std::optional<json> json_in_child(const std::function<json()>& work, double seconds);

/// probe_tier and a write test (a directory made and removed at the path) in a child process
/// that must answer within `seconds`, so that a frozen filesystem or a hung network mount never
/// holds the run: tier_json plus `answered` (false: the child did not answer in time, `mounted`
/// is null and `reason` says so) and `write_error` ("" when the directory could be made).
json probe_tier_bounded(const TierDecl& t, const std::string& host, double seconds);

/// The probe as extra.tier of an io.tiers record (docs/records.md): name, path, origin,
/// mounted, reason, real_path, mount_point, fs_type, source, dev, network, shared,
/// filesystem_id, media, capacity_tb, free_tb (null when unknown), summary.
json tier_json(const TierDecl& t, const TierProbe& p);

/// A filesystem of a node that is no declared tier's: listed, not judged.
struct FoundFs {
  std::string mount_point, fs_type, source, dev, media;
  std::optional<FsSpace> space;
};

/// The data filesystems of a node: mounts backed by a block device (major != 0) or on a network
/// filesystem, not read-only, not below /proc, /sys, /dev, /run or /boot, no squashfs, overlay
/// or iso9660; one per device (the shortest mount point of its bind mounts).
std::vector<FoundFs> data_filesystems(const std::vector<Mount>& mounts, const std::string& fs_root,
                                      const SpaceOf& space);

}  // namespace clusterbench::io
