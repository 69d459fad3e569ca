#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# gtest-own: a gtest binary with our cases only (rc_varuna.am's sources) and
# the bases they derive from, linked from the objects of UCX's own gtest
# Makefile. contrib/ucx-build asan builds it, not all of UCX's gtest: UCX's
# ~130 test sources under AddressSanitizer took 25 of CI's 78 minutes, and
# only our cases run there (test/check/own-gtest-asan.sh). Used as an extra
# makefile in UCX's test/gtest build directory:
#
#   make -f Makefile -f $(our test/gtest)/own-gtest.mk gtest-own
#

# What our cases derive from or call: gtest's common code, the UCT and UCP
# test bases, UD's (test_rc_varuna_ud_aux)
own_gtest_bases = \
	common/gtest-main.$(OBJEXT) \
	common/gtest-test_gtest_cmn.$(OBJEXT) \
	common/gtest-mem_buffer.$(OBJEXT) \
	common/gtest-test_helpers.$(OBJEXT) \
	common/gtest-test.$(OBJEXT) \
	uct/gtest-uct_test.$(OBJEXT) \
	uct/gtest-uct_p2p_test.$(OBJEXT) \
	uct/ib/gtest-ud_base.$(OBJEXT) \
	ucp/gtest-ucp_test.$(OBJEXT)

# Taken from gtest_OBJECTS, so that rc_varuna.am's conditions hold here too
own_gtest_OBJECTS = \
	$(filter $(own_gtest_bases) uct/ib/varuna/% ucp/varuna/%,$(gtest_OBJECTS))

gtest-own$(EXEEXT): $(own_gtest_OBJECTS) $(gtest_DEPENDENCIES)
	@rm -f $@
	$(AM_V_CXXLD)$(gtest_LINK) $(own_gtest_OBJECTS) $(gtest_LDADD) $(LIBS)
