// The tile widths, shared by the kernels and their launches.
#pragma once
#define TILE 128
#define WIDE 512
