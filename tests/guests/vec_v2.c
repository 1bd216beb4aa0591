/* vec_v2.c - vec_work.h built with -O2 -march=x86-64-v2 (build.sh). */
#include "vec_work.h"
