/* monitor.c - placeholder */
#include "gp_internal.h"
