#ifndef SHAREBROKER_CSODIUM_SHIM_H
#define SHAREBROKER_CSODIUM_SHIM_H
#include <sodium.h>
#endif
