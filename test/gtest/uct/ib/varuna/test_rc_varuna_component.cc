/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#include <common/test.h>

extern "C" {
#include <uct/api/uct.h>
}

#include <dlfcn.h>
#include <string.h>
#include <libgen.h>
#include <string>
#include <vector>


/*
 * rc_varuna registers its own UCT component from a UCX module (DESIGN.md
 * section 3.1). These tests check that UCT finds it the way applications do:
 * through uct_query_components(), which loads the modules of uct_MODULES.
 */
class test_rc_varuna_component : public ucs::test {
protected:
    static const char *component_name()
    {
        return "rc_varuna";
    }

    /* Components named rc_varuna among all the components UCT lists */
    static std::vector<uct_component_h> find_components()
    {
        std::vector<uct_component_h> found;
        uct_component_h *components;
        unsigned num_components;

        ASSERT_UCS_OK(uct_query_components(&components, &num_components));
        ucs::handle<uct_component_h*> components_h(components,
                                                   uct_release_component_list);

        for (unsigned i = 0; i < num_components; ++i) {
            uct_component_attr_t attr = {};

            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            ASSERT_UCS_OK(uct_component_query(components[i], &attr));
            if (!strcmp(attr.name, component_name())) {
                found.push_back(components[i]);
            }
        }

        return found;
    }
};


UCS_TEST_F(test_rc_varuna_component, registered_once) {
    EXPECT_EQ(1ul, find_components().size());
}

UCS_TEST_F(test_rc_varuna_component, provided_by_module) {
    std::vector<uct_component_h> components = find_components();
    ASSERT_EQ(1ul, components.size());

    /* The component must come from the loadable module, not be linked into
     * the test binary or into libuct_ib */
    Dl_info info;
    ASSERT_NE(0, dladdr(components[0], &info));
    ASSERT_TRUE(info.dli_fname != NULL);

    std::string path(info.dli_fname);
    std::string file(basename(&path[0]));
    EXPECT_EQ(0u, file.find("libuct_varuna.so")) << info.dli_fname;
}

UCS_TEST_F(test_rc_varuna_component, no_memory_domain_yet) {
    std::vector<uct_component_h> components = find_components();
    ASSERT_EQ(1ul, components.size());

    uct_component_attr_t attr = {};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT |
                      UCT_COMPONENT_ATTR_FIELD_FLAGS;
    ASSERT_UCS_OK(uct_component_query(components[0], &attr));

    /* Until the transport lands the component offers no memory domain; this
     * changes with the issue that adds the rc_varuna iface */
    EXPECT_EQ(0u, attr.md_resource_count);
    EXPECT_EQ(0ul, attr.flags & UCT_COMPONENT_FLAG_CM);
}
