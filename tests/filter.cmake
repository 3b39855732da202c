# Filters (src/filter, issue 13 section 1): the language itself, then
# filters in the probe, on read, and installed live.
mark_test(test_filter_parse SOURCES filter/test_filter_parse.c)
target_include_directories(test_filter_parse PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(test_filter_parse PRIVATE mark_static)
