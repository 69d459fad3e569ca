/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifndef RC_VARUNA_TEST_SOFTIB_CONTROL_H
#define RC_VARUNA_TEST_SOFTIB_CONTROL_H

#include <softib/ctl.h>

#include <string>


/*
 * softib's control API (link state, drop rules), for tests that inject
 * faults. libsoftib is loaded at run time, so UCX's gtest binary does not
 * depend on it: where it is missing (real hardware, no softib build) the
 * tests that need it skip. Found by the library path, else in
 * $RC_VARUNA_PREFIX/lib (build/env.sh sets it).
 */
class softib_control {
public:
    softib_control();
    ~softib_control();

    /* empty if usable; else why not */
    const std::string &error() const { return m_error; }

    /* For a case that needs the control: skip it when the control is
     * missing, except under our runners (test/gtest/run-own.sh sets
     * RC_VARUNA_SOFTIB_REQUIRED), which always run under softib: there a
     * missing control is a broken set-up, and a skip would pass the run
     * without testing anything, so the case aborts */
    void require() const;

    void link(const std::string &dev, unsigned port, bool up);
    /* returns the rule id */
    uint32_t rule(const struct softib_rule &rule);
    void rule_del(uint32_t id);
    /* all ports up, no rules */
    void reset();
    /* a counter of `softib counters`, summed over the contexts of dev
     * (NULL: of every device); negative if unknown */
    int64_t counter(const char *dev, const char *name);

private:
    void                *m_lib;
    softib_ctl_t        *m_ctl;
    std::string         m_error;

    decltype(&softib_ctl_open)     m_open;
    decltype(&softib_ctl_close)    m_close;
    decltype(&softib_ctl_link_set) m_link_set;
    decltype(&softib_ctl_rule_add) m_rule_add;
    decltype(&softib_ctl_rule_del) m_rule_del;
    decltype(&softib_ctl_reset)    m_reset;
    decltype(&softib_ctl_counter)  m_counter;
};

#endif
