# `mroce agent` (the reference conformance agent); included by apps/CMakeLists.txt. Needs the
# conformance library and the engine on DPDK ports.
if(TARGET mroce_conform AND TARGET mroce_dpdk_engine_io)
  target_sources(mroce PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cmd_agent.cpp)
  target_link_libraries(mroce PRIVATE mroce_conform mroce_dpdk_engine_io mroce_engine nlohmann_json::nlohmann_json)
  target_compile_definitions(mroce PRIVATE MROCE_HAVE_AGENT=1)
endif()
