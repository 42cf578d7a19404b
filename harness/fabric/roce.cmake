# The RoCEv2 baseline (roce_host.*, roce_run.cpp): plain C++20, no ns-3 headers, built into
# mroce_fabric; its tests in roce_tests.
target_sources(mroce_fabric PRIVATE ${CMAKE_CURRENT_LIST_DIR}/roce_host.cpp ${CMAKE_CURRENT_LIST_DIR}/roce_run.cpp)

add_executable(roce_tests ${CMAKE_CURRENT_LIST_DIR}/tests/roce_test.cpp)
target_link_libraries(roce_tests PRIVATE mroce_fabric mroce_warnings GTest::gtest_main)
gtest_discover_tests(roce_tests TEST_PREFIX "fabric." DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
