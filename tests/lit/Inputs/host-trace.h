// Included by legality-host-pass.cu in host-only text: macros the device parse never sees.
#pragma once
#define stage 0
#define load_next_tile 0
#define s_next 0
#define t_next 0
