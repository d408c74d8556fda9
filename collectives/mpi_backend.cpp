// The MPI backend of the collectives (collective.hpp): host buffers, blocking MPI collectives on a
// duplicate of MPI_COMM_WORLD, so its timings are a plain MPI timing loop's. MPI has no half or
// bfloat16 type: those travel as MPI_UINT16_T and reduce with user-defined sum ops (sum_into).
// This file is the backend, so its MPI calls live here rather than in bench/core/context.cpp.
// A hung peer blocks a call here; the run's watchdog (--case-timeout) ends the run (exit 3).
#include "collectives/collective.hpp"

#if CLUSTERBENCH_HAVE_MPI
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "core/api/context.hpp"
#include "core/api/error.hpp"
#include "core/api/mpi_check.hpp"

namespace clusterbench::collectives {

namespace {

void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_into(Dtype::f16, in, inout, *len);
}
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_into(Dtype::bf16, in, inout, *len);
}

class MpiBackend : public Backend {
 public:
  MpiBackend() {
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    CHECK_MPI(MPI_Comm_size(comm_, &size_));
    CHECK_MPI(MPI_Op_create(half_sum, 1, &half_op_));
    CHECK_MPI(MPI_Op_create(bf16_sum, 1, &bf16_op_));
  }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool supports_inplace(const Collective& c) const override {
    return std::strcmp(c.name, "sendrecv") != 0;
  }
  long long inplace_result_offset(const Collective& c, const Layout& l) const override {
    // MPI_Reduce_scatter_block with MPI_IN_PLACE leaves the block at the buffer's start.
    return std::strcmp(c.name, "reduce_scatter") == 0 ? 0 : l.recv_offset_inplace;
  }

  void* alloc(std::size_t bytes) override {
    void* p = std::malloc(bytes > 0 ? bytes : 1);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    std::memcpy(dst, host, bytes);
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    std::memcpy(host, src, bytes);
  }
  json facts() const override {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    std::string s(v, static_cast<size_t>(len));
    s.erase(s.find_last_not_of('\0') + 1);  // OpenMPI counts the terminator in len
    return {{"backend_version", s.substr(0, s.find('\n'))},
            {"mpi_thread_level", Context::mpi_thread_level()}};
  }
  double run(const Collective& c, Dtype t, const void* send, void* recv, const Layout& l, int root,
             bool inplace, long long ops) override {
    // Everything but the MPI call is settled once per batch, so the loop is a plain MPI timing
    // loop (the harness adds nothing to MPI's own time).
    if (std::max(l.send_count, l.recv_count) > INT_MAX)
      throw Waived("MPI backend: " + std::to_string(std::max(l.send_count, l.recv_count)) +
                   " elements exceed MPI's int count (OpenMPI 4 has no large-count calls)");
    const MPI_Datatype ty = t == Dtype::f32 ? MPI_FLOAT : MPI_UINT16_T;
    const MPI_Op op = t == Dtype::f32 ? MPI_SUM : t == Dtype::f16 ? half_op_ : bf16_op_;
    const void* sb = inplace ? MPI_IN_PLACE : send;
    const int block = static_cast<int>(l.block);
    const int cnt = static_cast<int>(l.send_count);
    const std::string name = c.name;
    if (poll_s_ > 0 && run_quietly(name, sb, send, recv, cnt, block, ty, op, inplace, ops)) {
    } else if (name == "all_reduce") {
      for (long long k = 0; k < ops; ++k) CHECK_MPI(MPI_Allreduce(sb, recv, cnt, ty, op, comm_));
    } else if (name == "all_gather") {
      // In-place: this rank's block already sits at rank x block of the receive buffer.
      for (long long k = 0; k < ops; ++k)
        CHECK_MPI(MPI_Allgather(sb, block, ty, recv, block, ty, comm_));
    } else if (name == "reduce_scatter") {
      // In-place: the whole input is in the buffer that `send` points at.
      void* rb = inplace ? const_cast<void*>(send) : recv;
      for (long long k = 0; k < ops; ++k)
        CHECK_MPI(MPI_Reduce_scatter_block(sb, rb, block, ty, op, comm_));
    } else if (name == "alltoall") {
      for (long long k = 0; k < ops; ++k)
        CHECK_MPI(MPI_Alltoall(sb, block, ty, recv, block, ty, comm_));
    } else if (name == "broadcast") {
      // NCCL's out-of-place broadcast leaves the root's data in the root's receive buffer too.
      const bool copy = !inplace && rank_ == root;
      const size_t bytes = static_cast<size_t>(l.recv_count) * dtype_size(t);
      for (long long k = 0; k < ops; ++k) {
        if (copy) std::memcpy(recv, send, bytes);
        CHECK_MPI(MPI_Bcast(recv, cnt, ty, root, comm_));
      }
    } else if (name == "reduce") {
      // MPI_IN_PLACE is the root's alone; the other ranks send from the shared buffer.
      const void* s = inplace && rank_ != root ? send : sb;
      for (long long k = 0; k < ops; ++k) CHECK_MPI(MPI_Reduce(s, recv, cnt, ty, op, root, comm_));
    } else if (name == "sendrecv") {
      const int next = (rank_ + 1) % size_, prev = (rank_ - 1 + size_) % size_;
      for (long long k = 0; k < ops; ++k)
        CHECK_MPI(
            MPI_Sendrecv(send, cnt, ty, next, 0, recv, cnt, ty, prev, 0, comm_, MPI_STATUS_IGNORE));
    } else {
      throw std::logic_error("MPI backend: unknown collective " + name);
    }
    return -1;
  }

  void set_poll_sleep(double seconds) override { poll_s_ = seconds; }

  /// all_reduce, reduce_scatter and all_gather as nonblocking calls completed by wait_quietly;
  /// false for another collective (the caller runs its blocking form).
  bool run_quietly(const std::string& name, const void* sb, const void* send, void* recv, int cnt,
                   int block, MPI_Datatype ty, MPI_Op op, bool inplace, long long ops) {
    for (long long k = 0; k < ops; ++k) {
      MPI_Request rq = MPI_REQUEST_NULL;
      if (name == "all_reduce") {
        CHECK_MPI(MPI_Iallreduce(sb, recv, cnt, ty, op, comm_, &rq));
      } else if (name == "reduce_scatter") {
        void* rb = inplace ? const_cast<void*>(send) : recv;
        CHECK_MPI(MPI_Ireduce_scatter_block(sb, rb, block, ty, op, comm_, &rq));
      } else if (name == "all_gather") {
        CHECK_MPI(MPI_Iallgather(sb, block, ty, recv, block, ty, comm_, &rq));
      } else {
        return false;
      }
      wait_quietly(rq);
    }
    return true;
  }
  /// MPI_Test every poll_s_ seconds, sleeping in between (OpenMPI progresses the call inside
  /// MPI_Test).
  void wait_quietly(MPI_Request& rq) const {
    int done = 0;
    for (;;) {
      CHECK_MPI(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
      if (done) return;
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_s_));
    }
  }

  bool has_plain_allreduce() const override { return true; }
  double plain_allreduce(const void* send, void* recv, long long count, long long ops) override {
    const int cnt = static_cast<int>(count);
    double t0 = MPI_Wtime();
    for (long long k = 0; k < ops; ++k)
      CHECK_MPI(MPI_Allreduce(send, recv, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    double t = MPI_Wtime() - t0, slowest = 0;
    CHECK_MPI(MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return slowest;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op half_op_ = MPI_OP_NULL, bf16_op_ = MPI_OP_NULL;
  int rank_ = 0, size_ = 1;
  double poll_s_ = 0;  ///< set_poll_sleep
};

}  // namespace

Backend* mpi_backend() {
  // Created on first use, which every rank reaches in the same collective case.
  static MpiBackend backend;
  return &backend;
}

}  // namespace clusterbench::collectives

#else  // built without MPI

namespace clusterbench::collectives {
Backend* mpi_backend() { return nullptr; }
}  // namespace clusterbench::collectives

#endif
