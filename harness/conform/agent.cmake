# The agent control protocol (AGENT_PROTOCOL.md): its server logic, the AgentDut client, their
# tests and the probe. Included by harness/conform/CMakeLists.txt after mroce_conform exists.
include(GoogleTest)

target_sources(mroce_conform PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/agent_server.cpp)
target_link_libraries(mroce_conform PUBLIC mroce_model mroce_engine PRIVATE mroce_warnings)

# AgentDut opens its own DPDK port for the wire: only with DPDK.
if(TARGET mroce_dpdk)
  target_sources(mroce_conform PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/agent_dut.cpp)
  target_link_libraries(mroce_conform PRIVATE mroce_dpdk)

  # conform.Agent*: the protocol without DPDK (line syntax, AgentServer on the in-memory loop,
  # AgentClient's checks of lying, stalled and unreachable agents).
  add_executable(conform_agent_test ${CMAKE_CURRENT_LIST_DIR}/tests/agent_test.cpp)
  target_link_libraries(conform_agent_test PRIVATE mroce_conform mroce_engine mroce_io mroce_warnings GTest::gtest_main)
  gtest_discover_tests(conform_agent_test TEST_PREFIX "conform." DISCOVERY_TIMEOUT 60)

  # The runner's side of an agent, end to end (hello, info, memory, a CONNECT/ACCEPT on the wire).
  add_executable(conform_agent_probe ${CMAKE_CURRENT_LIST_DIR}/tools/agent_probe.cpp)
  target_link_libraries(conform_agent_probe PRIVATE mroce_conform mroce_ref_codec mroce_warnings CLI11::CLI11)

  # `mroce agent` in one namespace, the probe in another, over a veth pair (af_packet both sides).
  # Needs root: exits 77 (skipped) otherwise; any other setup failure fails.
  add_test(NAME conform.AgentOverVeth
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/tests/agent_veth.sh $<TARGET_FILE:mroce>
                   $<TARGET_FILE:conform_agent_probe>)
  set_tests_properties(conform.AgentOverVeth PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)

  # The whole conformance suite through `mroce agent` over a veth pair, as a vendor runs it.
  add_test(NAME conform.SuiteOverVeth
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/tests/conform_veth.sh $<TARGET_FILE:mroce>
                   ${PROJECT_SOURCE_DIR}/traces/conformance)
  set_tests_properties(conform.SuiteOverVeth PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endif()
