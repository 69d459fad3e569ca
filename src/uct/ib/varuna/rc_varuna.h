/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_RC_VARUNA_H
#define UCT_RC_VARUNA_H

/*
 * rc_varuna's types and entry points, one header per object as UCX's ud and
 * dc transports have them:
 *   rc_varuna_def.h       constants, enums, forward type names, wire formats
 *   rc_varuna_md.h        the memory domain (rc_varuna_md.c)
 *   rc_varuna_iface.h     the interface (rc_varuna_iface.c, the log words)
 *   rc_varuna_failover.h  the failover, its detection, control channel,
 *                         re-protection, report and UCP's purge
 *   rc_varuna_ep.h        the endpoint and its lanes
 * and rc_varuna_impl.h, the inline posting path the sources share (not for
 * tests). Each .c file includes this header.
 *
 * Tests (test/gtest/uct/ib/varuna/, test/gtest/ucp/varuna/) include this
 * header alone, never rc_varuna_impl.h. They may read the objects' fields
 * (the counters in iface->fo, ep->tx.sn, ep->lane[], ep->fo.state, ...)
 * and call the inline functions of rc_varuna_ep.h
 * (uct_rc_varuna_ep_has_standby, uct_rc_varuna_ep_op,
 * uct_rc_varuna_log_word) and the plain-C classifier and PSN arithmetic
 * (rc_varuna_classify.h, rc_varuna_psn.h); anything else they need must be
 * reachable from here.
 */

#include "rc_varuna_classify.h"
#include "rc_varuna_def.h"
#include "rc_varuna_ep.h"
#include "rc_varuna_failover.h"
#include "rc_varuna_iface.h"
#include "rc_varuna_md.h"
#include "rc_varuna_psn.h"

#endif
