/// \file wasmtime/component/types.h

#ifndef WASMTIME_COMPONENT_TYPES_H
#define WASMTIME_COMPONENT_TYPES_H

#include <wasmtime/component/types/component.h>
#include <wasmtime/component/types/func.h>
#include <wasmtime/component/types/instance.h>
#include <wasmtime/component/types/module.h>
#include <wasmtime/component/types/resource.h>
#include <wasmtime/component/types/val.h>

#endif // WASMTIME_COMPONENT_TYPES_H
