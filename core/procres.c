/* This process's resources from /proc (core/procres.h). */
#include "core/procres.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

int acl_dir_count(const char *path, const char *part)
{
  DIR *d = opendir(path);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    n += e->d_name[0] != '.' && (!part || strstr(e->d_name, part));
  if (d)
    closedir(d);
  return n;
}

static int count_lines(const char *path, const char *needle)
{
  FILE *f = fopen(path, "r");
  char line[512];
  int n = 0;
  while (f && fgets(line, sizeof(line), f))
    n += strstr(line, needle) != NULL;
  if (f)
    fclose(f);
  return n;
}

static long rss_kb(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = 0;
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb;
}

void acl_procres_read(acl_procres_t *r)
{
  r->shm_maps = count_lines("/proc/self/maps", "/dev/shm/");
  int fds = acl_dir_count("/proc/self/fd", NULL);
  r->fds = fds > 0 ? fds - 1 : 0; /* the listing's own descriptor is one of them */
  r->threads = acl_dir_count("/proc/self/task", NULL);
  r->rss_kb = rss_kb();
}
