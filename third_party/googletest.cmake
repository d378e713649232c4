# GoogleTest (Debian: libgtest-dev, libgmock-dev). Provides GTest::gtest_main.
find_package(GTest REQUIRED)
include(GoogleTest)
