// The software stack of a node beyond the GPU driver (the seed guide's software list):
// cuDNN, NCCL, PyTorch and the CUDA it was built for, the NVIDIA container toolkit, the container
// runtime, Kubernetes' NVIDIA device plugin and GPU feature discovery, the DCGM exporter, and the
// NCCL environment of the run. Each is recorded as found, with its version, or as absent with
// the reason: never a version 0 (docs/design.md "Unknown is not zero"). Spec rows judge the states
// (reports/specs/gpu-node-base.json); docs/records.md lists the fields.
#pragma once

#include <string>

#include "records/records.hpp"

namespace clusterbench {

/// Where the probes look, and how long they may take. Files (sockets, labels) are read below
/// `fs_root`; libraries, commands, the exporter and the environment are this process's.
struct SoftwareProbeOptions {
  std::string fs_root = "/";
  /// The DCGM exporter's metrics URL: CLUSTERBENCH_DCGM_EXPORTER_URL, else
  /// http://localhost:9400/metrics (the exporter's default port). Only http:// is read.
  std::string dcgm_url;
  double command_timeout_s = 20;  ///< `python3 -c "import torch"` can take seconds
  double http_timeout_s = 2;
};

/// Every component of SoftwareStack (records.hpp). Never throws; what could not be probed says
/// why in its `detail`.
SoftwareStack collect_software(const SoftwareProbeOptions& opt);

// The parsers, for tests.

/// cudnnGetVersion()'s number as a version: cuDNN 9 encodes major * 10000 + minor * 100 + patch
/// (90100 -> "9.1.0"), cuDNN 8 and older major * 1000 + minor * 100 + patch (8902 -> "8.9.2")
/// (cuDNN API reference, cudnnGetVersion). "" for 0.
std::string cudnn_version_text(long long v);

/// ncclGetVersion()'s number: major * 10000 + minor * 100 + patch since NCCL 2.9 (22105 ->
/// "2.21.5"), major * 1000 + minor * 100 + patch before (2708 -> "2.7.8") (nccl.h NCCL_VERSION).
std::string nccl_version_text(long long v);

/// The version in `nvidia-ctk --version`'s output ("NVIDIA Container Toolkit CLI version 1.14.3"
/// and a commit line -> "1.14.3"); "" when none.
std::string container_toolkit_version(const std::string& out);

/// The first dotted version number in a line of text ("Docker version 24.0.7, build afdd53b" ->
/// "24.0.7", "containerd github.com/containerd/containerd 1.7.2 ..." -> "1.7.2"); "" when none.
std::string first_version(const std::string& text);

/// Whether an HTTP response (status line, headers, body) is a 200 whose body exports `metric`
/// as a sample line (a line that starts with the metric's name, not a # HELP/# TYPE comment).
bool exports_metric(const std::string& response, const std::string& metric, std::string& why);

/// The operating system from os-release below `fs_root` (/etc/os-release, else
/// /usr/lib/os-release): version "ID VERSION_ID" ("ubuntu 22.04"), detail the file and its
/// PRETTY_NAME; state "" (unknown) when neither file is readable.
SoftwareComponent os_release(const std::string& fs_root);

/// The image references of the containers the runtime runs, from their OCI config.json's CRI
/// annotation (io.kubernetes.cri.image-name; CRI-O's io.kubernetes.cri-o.ImageName) in
/// containerd's k8s.io bundles and CRI-O's container state below `fs_root`; sorted, unique.
std::vector<std::string> running_images(const std::string& fs_root);

/// The version in the tag of the first of `images` whose repository path ends with `repo`
/// ("k8s-device-plugin"): "v0.14.0" -> "0.14.0", "3.1.8-3.1.5-ubuntu20.04" -> "3.1.8-3.1.5" (the
/// base image's suffix dropped); `image` the reference it came from. "" when none has one.
std::string image_version(const std::vector<std::string>& images, const std::string& repo,
                          std::string& image);

}  // namespace clusterbench
