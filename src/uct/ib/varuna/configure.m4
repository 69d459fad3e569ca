#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Included from UCX's src/uct/ib/configure.m4 (contrib/ucx-patches), after the
# IB checks. rc_varuna reuses rc/base and ib/base from libuct_ib, so it is
# built when IB and RC are. Adding "varuna" to uct_modules makes
# uct_query_components() load libuct_varuna before it lists the components.
#

AS_IF([test "x$with_ib" != xno -a "x$with_rc" != xno],
      [uct_modules="${uct_modules}:varuna"
       rc_varuna_happy=yes],
      [rc_varuna_happy=no])

AM_CONDITIONAL([HAVE_TL_RC_VARUNA], [test "x$rc_varuna_happy" = xyes])
AC_CONFIG_FILES([src/uct/ib/varuna/Makefile])
