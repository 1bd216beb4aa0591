/* vec_native.c - vec_work.h built with -O3 -march=native (build.sh). */
#include "vec_work.h"
