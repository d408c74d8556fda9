// CHECK_MPI: an MPI call that fails throws CallError with MPI's own error string, the call text,
// file:line, host and rank (bench/error.hpp). Include only where CLUSTERBENCH_HAVE_MPI is 1; the
// communicator used must have MPI_ERRORS_RETURN (the context sets it on MPI_COMM_WORLD, and
// communicators derived from it inherit it).
#pragma once

#include <mpi.h>

#include <string>

#include "core/api/error.hpp"

#define CHECK_MPI(call)                                                                           \
  do {                                                                                            \
    int cb_rc_ = (call);                                                                          \
    if (cb_rc_ != MPI_SUCCESS) {                                                                  \
      char cb_msg_[MPI_MAX_ERROR_STRING];                                                         \
      int cb_len_ = 0;                                                                            \
      MPI_Error_string(cb_rc_, cb_msg_, &cb_len_);                                                \
      ::clusterbench::throw_call_error("MPI", std::to_string(cb_rc_),                             \
                                       std::string(cb_msg_, static_cast<size_t>(cb_len_)), #call, \
                                       __FILE__, __LINE__);                                       \
    }                                                                                             \
  } while (0)
