// The tile width, shared by the kernel and its launch.
#pragma once
#define TILE 128
