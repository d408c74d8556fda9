// The readers of /sys and /proc below a filesystem root (docs/design.md "Filesystem roots"), for
// the inventory (inventory*.cpp) and io/ (the scratch device's disks): one set, so that a fixture
// tree and the live machine are read the same way everywhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clusterbench::sysfs {

/// The path of `abs` (an absolute path like "/sys/...") below `root` ("" or "/": this machine).
std::string under(const std::string& root, const std::string& abs);

/// Whether `root` is this machine's ("" or "/"), not a fixture tree.
bool is_live(const std::string& root);

/// `s` without surrounding whitespace.
std::string trim(std::string_view s);

/// A whole file's bytes; nullopt when it cannot be opened or read (`why` gets errno's text).
std::optional<std::string> read_raw(const std::string& path, std::string* why = nullptr);

/// A file's text trimmed (sysfs values end in "\n"), as valid UTF-8 (a DMI string or a host
/// name is bytes); nullopt as read_raw.
std::optional<std::string> read_text(const std::string& path, std::string* why = nullptr);

/// read_text, "" when unreadable (an optional attribute such as a disk's serial).
std::string read_or_empty(const std::string& path);

/// A whole number in `base`; nullopt for an empty or malformed text.
std::optional<long long> parse_ll(const std::string& s, int base = 10);

/// A file's whole number (read_text, parse_ll).
std::optional<long long> read_ll(const std::string& path, int base = 10);

/// Names in a directory, sorted; empty when it cannot be listed (`why` says why).
std::vector<std::string> list_dir(const std::string& path, std::string* why = nullptr);

/// Whether `path` exists (a link counts, whatever it points at).
bool exists(const std::string& path);

/// The resolved target of a sysfs link (relative links stay inside a fixture tree); "" when it
/// does not resolve.
std::string resolved(const std::string& link);

/// What sysfs says of a whole disk at `dir` (/sys/class/block/NAME, or the /sys/devices path it
/// resolves to): model, serial (the device's, else virtio-blk's own), firmware (an NVMe
/// controller's firmware_rev, else the SCSI rev), "" where unreadable; rotational from
/// queue/rotational, nullopt when it says neither 0 nor 1.
struct DiskIdentity {
  std::string model, serial, firmware;
  std::optional<bool> rotational;
};
DiskIdentity disk_identity(const std::string& dir, bool nvme);

}  // namespace clusterbench::sysfs
