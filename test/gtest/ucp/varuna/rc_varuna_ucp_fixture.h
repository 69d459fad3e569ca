/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef RC_VARUNA_TEST_UCP_FIXTURE_H
#define RC_VARUNA_TEST_UCP_FIXTURE_H

#include <common/test.h>
#include <ucp/ucp_test.h>
#include <uct/ib/varuna/softib_control.h>


/*
 * What the UCP tests of rc_varuna (test_rc_varuna_ucp_failover.cc,
 * test_rc_varuna_ucp_spare_lane.cc) share: UCX's settings for a peer
 * failure, softib's control (its faults undone after each test), the
 * memory of the entity the sender's operations reach, mapped with a key
 * the sender holds, and the count of endpoint error callbacks. A test sets
 * its own configuration before calling init(), and connects its endpoints
 * after.
 */
class test_rc_varuna_ucp_base : public ucp_test {
public:
    test_rc_varuna_ucp_base();

    virtual void init();

    virtual void cleanup();

protected:
    /* the entity whose memory the sender's operations reach */
    virtual entity &target()
    {
        return receiver();
    }

    /* Whether cleanup() hides the errors and warnings of closing the
     * endpoints (they failed, or may have) */
    virtual bool hide_cleanup_errors() const
    {
        return true;
    }

    /* Endpoint parameters: with err_cb, error handling mode peer and
     * err_cb called with this test (its base, test_rc_varuna_ucp_base);
     * without (NULL), UCP's defaults */
    ucp_ep_params_t ep_params(ucp_err_handler_cb_t err_cb);

    /* An endpoint's error callback: counts it (m_err_count) */
    static void err_cb(void *arg, ucp_ep_h ep, ucs_status_t status);

    /* Map length bytes at address in target()'s memory (m_memh), and
     * unpack its key on the sender's endpoint (m_rkey); cleanup() unmaps
     * it */
    void map_target_memory(void *address, size_t length);

    size_t                  m_err_count;
    softib_control          m_softib;
    ucp_mem_h               m_memh = NULL;
    ucs::handle<ucp_rkey_h> m_rkey;
};

#endif
