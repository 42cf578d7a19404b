// The entry point libfabric's loader looks up in every *fi.so of FI_PROVIDER_PATH (DESIGN.md 1.2-1.3):
// fi_prov_ini returns the provider; its parameters become FI_MROCE_* environment variables, listed
// by `fi_info -e`. cleanup() runs from libfabric's destructor, before dlclose.
#include <cstring>

#include "fi/config.hpp"
#include "fi/host.hpp"
#include "fi/info.hpp"
#include "fi/objects.hpp"
#include "fi/provider.hpp"
#include "mroce/mroce.hpp"

namespace mroce::fi {
namespace {

void provider_cleanup() noexcept {
  // The device host lives until here (DESIGN.md 6.5: EAL cannot restart once cleaned up).
  guarded(FI_LOG_CORE, "cleanup", [] {
    DeviceHost::shutdown();
    return 0;
  });
}

}  // namespace

struct fi_provider g_provider = {
    .version = kProviderVersion,
    .fi_version = kApiVersion,
    .context = {},
    .name = kFabricName,
    .getinfo = getinfo,
    .fabric = open_fabric,
    .cleanup = provider_cleanup,
};

const char* provider_strerror(int prov_errno, char* buf, size_t len) noexcept {
  const char* text = prov_errno >= 0 && prov_errno <= static_cast<int>(Status::LocalProtection)
                         ? status_name(static_cast<Status>(prov_errno))
                         : "unknown mroce error";
  if (buf == nullptr || len == 0) return text;
  std::strncpy(buf, text, len - 1);
  buf[len - 1] = '\0';
  return buf;
}

int no_bind(struct fid*, struct fid*, uint64_t) { return -FI_ENOSYS; }
int no_control(struct fid*, int, void*) { return -FI_ENOSYS; }
int no_ops_open(struct fid*, const char*, uint64_t, void**, void*) { return -FI_ENOSYS; }

}  // namespace mroce::fi

extern "C" FI_EXT_INI {
  mroce::fi::define_parameters();
  return &mroce::fi::g_provider;
}
