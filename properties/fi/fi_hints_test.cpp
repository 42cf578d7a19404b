// fi.HintRefusals (DESIGN.md 6.3 M0, 7): what mroce cannot give is refused with -FI_ENODATA, never
// accepted and broken later; the hint sets captured from fi_pingpong 1.17 and Open MPI 4.1.4's mtl
// ofi (DESIGN.md 2, 3.1) are accepted with attributes those programs depend on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "fi_test_util.hpp"

namespace mroce::fi_test {
namespace {

constexpr uint32_t kApi = FI_VERSION(1, 17);
// libfabric's internal OFI_CORE_PROV_ONLY (utility providers querying core providers, DESIGN.md 1.5).
constexpr uint64_t kCoreProviderOnly = 1ULL << 59;

// Hints accepted by default (an RDM endpoint for messages), for the refusal cases to spoil one field.
InfoPtr base_hints() {
  InfoPtr h = mroce_hints();
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_MSG;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  return h;
}

void expect_refused(const InfoPtr& hints, uint32_t version = kApi) {
  InfoPtr info;
  EXPECT_EQ(getinfo(version, hints.get(), &info), -FI_ENODATA);
}

TEST(HintRefusals, BaseHintsAccepted) {  // the refusals below differ from these in one field only
  InfoPtr info;
  ASSERT_EQ(getinfo(kApi, base_hints().get(), &info), 0);
  EXPECT_EQ(info->ep_attr->type, FI_EP_RDM);
}

TEST(HintRefusals, Atomic) {
  InfoPtr h = base_hints();
  h->caps |= FI_ATOMIC;
  expect_refused(h);
}

TEST(HintRefusals, DgramEndpoint) {  // fi_pingpong's default endpoint type
  InfoPtr h = base_hints();
  h->ep_attr->type = FI_EP_DGRAM;
  expect_refused(h);
}

TEST(HintRefusals, RmaWithoutProviderKeys) {
  InfoPtr h = base_hints();
  h->caps = FI_RMA;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
  expect_refused(h);
  // Before API 1.5: FI_MR_SCALABLE means application-chosen keys.
  h->domain_attr->mr_mode = FI_MR_SCALABLE;
  expect_refused(h, FI_VERSION(1, 4));
}

TEST(HintRefusals, RmaEvent) {  // no target-side events of the engine (DESIGN.md 5.8 G9)
  InfoPtr h = base_hints();
  h->caps |= FI_RMA | FI_RMA_EVENT;
  expect_refused(h);
  h->ep_attr->type = FI_EP_MSG;
  expect_refused(h);
}

TEST(HintRefusals, MsgEntriesOfferRma) {  // M3: RMA on MSG endpoints too; atomics nowhere
  InfoPtr h = base_hints();
  h->ep_attr->type = FI_EP_MSG;
  h->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  InfoPtr info;
  ASSERT_EQ(getinfo(kApi, h.get(), &info), 0);
  EXPECT_EQ(info->ep_attr->type, FI_EP_MSG);
  EXPECT_EQ(info->caps & h->caps, h->caps);
  EXPECT_NE(info->domain_attr->mr_mode & FI_MR_PROV_KEY, 0);
  EXPECT_EQ(info->domain_attr->cq_data_size, 4u);
  EXPECT_EQ(info->domain_attr->mr_key_size, 4u);
  // Offset mode: keys carry the region's iova window as well (impl/fi/mr.cpp).
  h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  ASSERT_EQ(getinfo(kApi, h.get(), &info), 0);
  EXPECT_EQ(info->domain_attr->mr_mode & FI_MR_VIRT_ADDR, 0);
  EXPECT_EQ(info->domain_attr->mr_key_size, 8u);
  h->caps |= FI_ATOMIC;
  expect_refused(h);
}

TEST(HintRefusals, DeliveryComplete) {
  InfoPtr h = base_hints();
  h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  expect_refused(h);
}

TEST(HintRefusals, ScalableEndpointContexts) {
  InfoPtr h = base_hints();
  h->domain_attr->max_ep_tx_ctx = 2;
  expect_refused(h);
  h = base_hints();
  h->ep_attr->rx_ctx_cnt = 2;
  expect_refused(h);
}

TEST(HintRefusals, WrongDomainName) {
  InfoPtr h = base_hints();
  h->domain_attr->name = strdup("memloop:7");
  expect_refused(h);
}

TEST(HintRefusals, ForeignDestAddr) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(47592);
  sin.sin_addr.s_addr = htonl(0x7f000001);
  InfoPtr h = base_hints();
  h->dest_addr = std::malloc(sizeof sin);
  std::memcpy(h->dest_addr, &sin, sizeof sin);
  h->dest_addrlen = sizeof sin;
  expect_refused(h);  // format UNSPEC, but not an mroce address
  h->addr_format = FI_SOCKADDR_IN;
  expect_refused(h);  // a format mroce does not speak
}

TEST(HintRefusals, OtherUnsupportedHints) {
  auto refused_after = [](auto spoil) {
    InfoPtr h = base_hints();
    spoil(h.get());
    expect_refused(h);
  };
  refused_after([](fi_info* h) { h->caps |= FI_MULTI_RECV; });
  refused_after([](fi_info* h) { h->caps |= FI_HMEM; });
  refused_after([](fi_info* h) { h->rx_attr->op_flags = FI_MULTI_RECV; });
  refused_after([](fi_info* h) { h->tx_attr->iov_limit = 2; });
  refused_after([](fi_info* h) { h->tx_attr->inject_size = 4096; });
  refused_after([](fi_info* h) { h->tx_attr->comp_order = FI_ORDER_STRICT; });
  refused_after([](fi_info* h) { h->domain_attr->cq_data_size = 8; });
  refused_after([](fi_info* h) { h->domain_attr->cntr_cnt = 1; });                      // no counters yet (M3)
  refused_after([](fi_info* h) { h->domain_attr->data_progress = FI_PROGRESS_AUTO; });  // no thread yet (M6)
  refused_after([](fi_info* h) { h->ep_attr->protocol = FI_PROTO_RXM; });
  refused_after([](fi_info* h) { h->fabric_attr->name = strdup("tcp"); });
}

TEST(HintRefusals, UtilityProviderLayeringOffByDefault) {
  InfoPtr info;
  EXPECT_EQ(getinfo(kApi, base_hints().get(), &info, kCoreProviderOnly), -FI_ENODATA);
  ASSERT_EQ(setenv("FI_MROCE_LAYERING", "1", 1), 0);
  EXPECT_EQ(getinfo(kApi, base_hints().get(), &info, kCoreProviderOnly), 0);
  unsetenv("FI_MROCE_LAYERING");
}

bool is_mroce(const fi_info* i) {
  return i->fabric_attr->prov_name && std::strcmp(i->fabric_attr->prov_name, "mroce") == 0;
}

TEST(HintRefusals, OpenMpiMtlOfiAccepted) {
  for (auto threading : {FI_THREAD_DOMAIN, FI_THREAD_SAFE}) {
    InfoPtr h = open_mpi_hints();
    h->domain_attr->threading = threading;
    InfoPtr info;
    ASSERT_EQ(getinfo(FI_VERSION(1, 5), h.get(), &info), 0);
    const fi_info* first = info.get();
    while (first != nullptr && !is_mroce(first)) first = first->next;
    ASSERT_NE(first, nullptr) << "no mroce entry";
    EXPECT_EQ(first->ep_attr->type, FI_EP_RDM);
    EXPECT_EQ(first->caps & h->caps, h->caps);
    EXPECT_EQ(first->mode, 0u);                               // no FI_CONTEXT needed
    EXPECT_EQ(first->domain_attr->mr_mode & FI_MR_LOCAL, 0);  // buffers arrive without descriptors
    EXPECT_GE(first->domain_attr->cq_data_size, 4u);          // ofi_tag_full possible
    EXPECT_NE(first->ep_attr->mem_tag_format >> 63, 0u);      // top bit set: full CID bits
    EXPECT_EQ(first->domain_attr->max_ep_tx_ctx, 1u);         // no SEP
    EXPECT_EQ(first->domain_attr->threading, threading);
    EXPECT_EQ(first->domain_attr->resource_mgmt, FI_RM_ENABLED);
    EXPECT_GT(first->tx_attr->inject_size, 0u);
    EXPECT_EQ(first->caps & FI_RMA, 0u);  // mr_mode 0: no provider keys, so no RMA offered
  }
}

// fi_pingpong 1.17's hints (DESIGN.md 2), as captured, for `-e type -m msg|tagged`.
InfoPtr pingpong_hints(fi_ep_type type, uint64_t caps) {
  InfoPtr h = mroce_hints();
  h->caps = caps;
  h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  h->ep_attr->type = type;
  return h;
}

// fi_pingpong for -e msg|rdm and -m msg|tagged. MSG endpoints do messages only (M2), so -e msg
// -m tagged is refused (FiPingpongMsgTaggedRefused).
TEST(HintRefusals, FiPingpongAccepted) {
  for (auto type : {FI_EP_MSG, FI_EP_RDM}) {
    for (uint64_t caps : {FI_MSG, FI_TAGGED}) {
      if (type == FI_EP_MSG && caps == FI_TAGGED) continue;
      InfoPtr h = pingpong_hints(type, caps);
      InfoPtr info;
      ASSERT_EQ(getinfo(kApi, h.get(), &info), 0) << fi_tostr(&type, FI_TYPE_EP_TYPE);
      EXPECT_EQ(info->ep_attr->type, type);
      EXPECT_EQ(info->caps & caps, caps);
      EXPECT_EQ(info->mode, 0u);
      EXPECT_EQ(info->ep_attr->msg_prefix_size, 0u);
      EXPECT_GE(info->tx_attr->inject_size, 65u);  // fi_pingpong injects at 64 B
      // fi_pingpong's default sizes end at 64 KiB for MSG (one bounce slot, no rendezvous yet).
      EXPECT_GE(info->ep_attr->max_msg_size, type == FI_EP_MSG ? size_t{1} << 16 : size_t{1} << 20);
      EXPECT_EQ(info->src_addrlen, 36u);
      // fi_pingpong's MSG client puts the server's name in dest_addr and asks again: echoed.
      InfoPtr again_hints(fi_dupinfo(h.get()));
      again_hints->dest_addr = std::malloc(info->src_addrlen);
      std::memcpy(again_hints->dest_addr, info->src_addr, info->src_addrlen);
      again_hints->dest_addrlen = info->src_addrlen;
      InfoPtr again;
      ASSERT_EQ(getinfo(kApi, again_hints.get(), &again), 0);
      ASSERT_EQ(again->dest_addrlen, info->src_addrlen);
      EXPECT_EQ(std::memcmp(again->dest_addr, info->src_addr, info->src_addrlen), 0);
    }
  }
}

TEST(HintRefusals, FiPingpongMsgTaggedRefused) {
  InfoPtr info;
  EXPECT_EQ(getinfo(kApi, pingpong_hints(FI_EP_MSG, FI_TAGGED).get(), &info), -FI_ENODATA);
}

TEST(HintRefusals, NoHintsGiveEveryDomainAndType) {
  InfoPtr info;
  ASSERT_EQ(getinfo(kApi, nullptr, &info), 0);
  int mroce_entries = 0;
  for (const fi_info* i = info.get(); i != nullptr; i = i->next) {
    if (!is_mroce(i)) continue;
    ++mroce_entries;
    // No hints: the application takes provider keys, so both entry types offer RMA (M3); MSG
    // endpoints have no tagged messages.
    const uint64_t rma = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    EXPECT_EQ(i->caps & rma, rma);
    EXPECT_EQ(i->caps & (FI_RMA_EVENT | FI_ATOMIC), 0u);
    if (i->ep_attr->type == FI_EP_MSG) { EXPECT_EQ(i->caps & FI_TAGGED, 0u); }
    EXPECT_NE(i->domain_attr->mr_mode & FI_MR_PROV_KEY, 0);
  }
  EXPECT_EQ(mroce_entries, 4);  // MSG and RDM on memloop:0 and memloop:1
}

TEST(HintRefusals, OldApiBasicMrModeTakesRma) {  // before 1.5 mr_mode is FI_MR_BASIC/SCALABLE
  InfoPtr h = base_hints();
  h->caps = FI_RMA;
  h->domain_attr->mr_mode = FI_MR_BASIC;
  InfoPtr info;
  ASSERT_EQ(getinfo(FI_VERSION(1, 4), h.get(), &info), 0);
  EXPECT_EQ(info->domain_attr->mr_mode, FI_MR_BASIC);
  EXPECT_NE(info->caps & FI_RMA, 0u);
}

TEST(HintRefusals, CapsTrimmedToTheAsked) {
  InfoPtr info;
  ASSERT_EQ(getinfo(kApi, base_hints().get(), &info), 0);  // asks FI_MSG
  EXPECT_EQ(info->caps & FI_TAGGED, 0u);
  EXPECT_EQ(info->caps & FI_RMA, 0u);
  EXPECT_NE(info->caps & FI_MSG, 0u);
}

}  // namespace
}  // namespace mroce::fi_test
