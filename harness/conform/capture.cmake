# Capture reader / writer of the conformance tools (conform/capture.hpp) and its unit test.
# Included by harness/conform/CMakeLists.txt after it has defined the library mroce_conform
# (which provides the include directory harness/conform). Needs libpcap (Debian: libpcap-dev).
find_package(PkgConfig REQUIRED)
target_sources(mroce_conform PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/capture.cpp)
if(NOT TARGET PkgConfig::PCAP)
  pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)
endif()
target_link_libraries(mroce_conform PUBLIC PkgConfig::PCAP)

include(GoogleTest)
add_executable(conform_capture_test ${CMAKE_CURRENT_LIST_DIR}/tests/capture_test.cpp)
target_link_libraries(conform_capture_test PRIVATE mroce_conform mroce_warnings GTest::gtest_main)
gtest_discover_tests(conform_capture_test TEST_PREFIX "conform." DISCOVERY_TIMEOUT 60)
