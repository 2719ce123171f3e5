/* This process's resources as Linux's /proc shows them, for leak checks
 * (the simulator's --churn-every, the plugin's churn and thread tests). */
#ifndef ACL_CORE_PROCRES_H
#define ACL_CORE_PROCRES_H

typedef struct acl_procres {
  int shm_maps; /* mappings of /dev/shm files (lines of /proc/self/maps) */
  int fds;      /* open descriptors, not counting the one that lists them */
  int threads;  /* entries of /proc/self/task */
  long rss_kb;  /* VmRSS; 0 when unknown */
} acl_procres_t;

void acl_procres_read(acl_procres_t *r);
/* Entries of a directory that do not start with '.' and, if part is not
 * NULL, contain it; 0 when it cannot be read. */
int acl_dir_count(const char *path, const char *part);

#endif
