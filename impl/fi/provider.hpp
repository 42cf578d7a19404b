// Shared pieces of libmroce-fi.so: the fi_provider object (for logging and parameters), the
// exception barrier every C entry point goes through, and the fid helpers (DESIGN.md 4, 6.1).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>

namespace mroce::fi {

// The provider as registered with libfabric (prov.cpp); FI_WARN & co. log under its name.
extern struct fi_provider g_provider;

inline constexpr const char* kFabricName = "mroce";
inline constexpr uint32_t kProviderVersion = FI_VERSION(0, 1);
// libfabric skips a provider whose fi_version is below the version the application asks for
// (DESIGN.md 1.3 step 5): fi_pingpong asks 1.17, Open MPI 4.1.4 asks 1.5.
inline constexpr uint32_t kApiVersion = FI_VERSION(1, 17);

// No C++ exception may cross the C ABI (DESIGN.md 6.5): every entry point runs its body through
// this barrier, which turns an escaping exception into an fi errno and one warning.
template <class Body>
int guarded(enum fi_log_subsys subsys, const char* what, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    FI_WARN(&g_provider, subsys, "%s: out of memory\n", what);
    return -FI_ENOMEM;
  } catch (const std::exception& e) {
    FI_WARN(&g_provider, subsys, "%s: %s\n", what, e.what());
    return -FI_EINVAL;
  } catch (...) {
    FI_WARN(&g_provider, subsys, "%s: unknown exception\n", what);
    return -FI_EINVAL;
  }
}

// Every provider object begins with its libfabric descriptor (fid_fabric, fid_domain, ...), whose
// first member is the struct fid libfabric hands back to us; this recovers the object from it.
template <class Object, class Fid>
Object* object_of(Fid* f) noexcept {
  return reinterpret_cast<Object*>(f);
}

// fi_cq_strerror / fi_eq_strerror: prov_errno is the engine's completion Status (DESIGN.md 5.6).
// Copies the text into buf when given (fi_cq(3)), and returns it.
const char* provider_strerror(int prov_errno, char* buf, size_t len) noexcept;

// Unimplemented entries of the ops tables: refuse honestly instead of pretending (DESIGN.md 4).
int no_bind(struct fid*, struct fid*, uint64_t);
int no_control(struct fid*, int, void*);
int no_ops_open(struct fid*, const char*, uint64_t, void**, void*);

}  // namespace mroce::fi
