// A stand-in libnccl.so.2 (issue 18 item 5): every NCCL build has that SONAME, so a process that
// loads two plugins built against two NCCLs maps only one and both plugins call it. Each build of
// this file sits in a folder of its own (tests/fake_nccl/cudaNNNNN/) and says which it is.
extern "C" const char* fake_nccl_identity(void) { return FAKE_NCCL_IDENTITY; }
