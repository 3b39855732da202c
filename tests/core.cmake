# Core: sites, registry, arming, probes.
mark_kind_test(test_api SOURCES test_api.c test_api_other_tu.c)
