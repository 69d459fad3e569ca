/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include "softib_control.h"

#include <common/test.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>


template <typename T>
static bool softib_control_sym(void *lib, const char *name, T &func)
{
    func = reinterpret_cast<T>(dlsym(lib, name));
    return func != NULL;
}

void softib_control::require() const
{
    if (m_error.empty()) {
        return;
    }
    if (getenv("RC_VARUNA_SOFTIB_REQUIRED") != NULL) {
        UCS_TEST_ABORT("no softib control: " + m_error);
    }
    UCS_TEST_SKIP_R("no softib control: " + m_error);
}

softib_control::softib_control() : m_lib(NULL), m_ctl(NULL)
{
    const char *prefix = getenv("RC_VARUNA_PREFIX");
    int ret;

    m_lib = dlopen("libsoftib.so.0", RTLD_NOW | RTLD_LOCAL);
    if ((m_lib == NULL) && (prefix != NULL)) {
        m_lib = dlopen((std::string(prefix) + "/lib/libsoftib.so.0").c_str(),
                       RTLD_NOW | RTLD_LOCAL);
    }
    if (m_lib == NULL) {
        m_error = "libsoftib.so.0 not found (set RC_VARUNA_PREFIX)";
        return;
    }

    if (!softib_control_sym(m_lib, "softib_ctl_open", m_open) ||
        !softib_control_sym(m_lib, "softib_ctl_close", m_close) ||
        !softib_control_sym(m_lib, "softib_ctl_link_set", m_link_set) ||
        !softib_control_sym(m_lib, "softib_ctl_rule_add", m_rule_add) ||
        !softib_control_sym(m_lib, "softib_ctl_rule_del", m_rule_del) ||
        !softib_control_sym(m_lib, "softib_ctl_reset", m_reset) ||
        !softib_control_sym(m_lib, "softib_ctl_counter", m_counter)) {
        m_error = "libsoftib.so.0 lacks the control API";
        return;
    }

    ret = m_open(&m_ctl);
    if (ret < 0) {
        m_error = std::string("softib_ctl_open: ") + strerror(-ret);
        m_ctl   = NULL;
    }
}

softib_control::~softib_control()
{
    if (m_ctl != NULL) {
        m_reset(m_ctl);
        m_close(m_ctl);
    }
    if (m_lib != NULL) {
        dlclose(m_lib);
    }
}

void softib_control::link(const std::string &dev, unsigned port, bool up)
{
    ASSERT_EQ(0, m_link_set(m_ctl, dev.c_str(), port, up))
            << dev << ":" << port;
}

uint32_t softib_control::rule(const struct softib_rule &rule)
{
    uint32_t id = 0;

    EXPECT_EQ(0, m_rule_add(m_ctl, &rule, &id));
    return id;
}

void softib_control::rule_del(uint32_t id)
{
    EXPECT_EQ(0, m_rule_del(m_ctl, id));
}

void softib_control::reset()
{
    EXPECT_EQ(0, m_reset(m_ctl));
}

int64_t softib_control::counter(const char *dev, const char *name)
{
    return m_counter(m_ctl, dev, name);
}
