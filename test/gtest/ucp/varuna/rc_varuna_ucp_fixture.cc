/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include "rc_varuna_ucp_fixture.h"


test_rc_varuna_ucp_base::test_rc_varuna_ucp_base() : m_err_count(0)
{
    /* ucp_test's settings for a failing peer: RC's short timeouts and few
     * retries, in the environment the transport reads when it opens */
    configure_peer_failure_settings();
}

void test_rc_varuna_ucp_base::init()
{
    ucp_test::init();
    m_softib.require();
}

void test_rc_varuna_ucp_base::cleanup()
{
    if (m_softib.error().empty()) {
        m_softib.reset();
    }
    m_rkey.reset();
    if (m_memh != NULL) {
        ucp_mem_unmap(target().ucph(), m_memh);
        m_memh = NULL;
    }
    if (!hide_cleanup_errors()) {
        ucp_test::cleanup();
        return;
    }
    /* the endpoints failed, or may have: closing them reports it */
    scoped_log_handler hide_err(hide_errors_logger);
    scoped_log_handler hide_warn(hide_warns_logger);
    ucp_test::cleanup();
}

ucp_ep_params_t test_rc_varuna_ucp_base::ep_params(ucp_err_handler_cb_t err_cb)
{
    ucp_ep_params_t params;

    memset(&params, 0, sizeof(params));
    if (err_cb != NULL) {
        params.field_mask      = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb  = err_cb;
        params.err_handler.arg = this;
    }
    return params;
}

void test_rc_varuna_ucp_base::err_cb(void *arg, ucp_ep_h ep,
                                     ucs_status_t status)
{
    ++reinterpret_cast<test_rc_varuna_ucp_base*>(arg)->m_err_count;
}

void test_rc_varuna_ucp_base::map_target_memory(void *address, size_t length)
{
    ucp_mem_map_params_t params;
    void *rkey_buffer;
    size_t rkey_size;
    ucp_rkey_h rkey;

    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                        UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address    = address;
    params.length     = length;
    ASSERT_UCS_OK(ucp_mem_map(target().ucph(), &params, &m_memh));
    ASSERT_UCS_OK(ucp_rkey_pack(target().ucph(), m_memh, &rkey_buffer,
                                &rkey_size));
    ASSERT_UCS_OK(ucp_ep_rkey_unpack(sender().ep(), rkey_buffer, &rkey));
    m_rkey.reset(rkey, ucp_rkey_destroy);
    ucp_rkey_buffer_release(rkey_buffer);
}
