/* The settings' names for programs that do not link core/ (autoccl-bench
 * and its probe plugin): they read a variable as getenv(ACL_ENV(NAME)), which
 * compiles only for a row of core/settings.def, so every AUTOCCL_* name is
 * still written once, in the table. */
#ifndef ACL_CORE_SETTING_NAMES_H
#define ACL_CORE_SETTING_NAMES_H

enum acl_setting_name_id {
#define ACL_SETTING_ROW(NAME, ...) ACL_SETTING_ID_##NAME,
#define ACL_SETTING_DOC(NAME, ...) ACL_SETTING_ID_##NAME,
#include "core/settings.def"
#undef ACL_SETTING_ROW
#undef ACL_SETTING_DOC
  ACL_SETTING_ID_COUNT
};

/* The variable's name as a string; a name not in the table does not compile. */
#define ACL_ENV(NAME) ((void)ACL_SETTING_ID_##NAME, #NAME)

#endif
