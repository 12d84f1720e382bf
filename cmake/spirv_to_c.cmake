# SPDX-License-Identifier: Apache-2.0
# cmake -DIN=x.spv -DOUT=x.h -DNAME=sym -P spirv_to_c.cmake: a SPIR-V binary as `const uint32_t NAME[] = {...};`,
# the form glslangValidator --vn writes (the words in host order: SPIR-V files are little-endian, as every target
# of vkvit is; a big-endian file would fail the magic-number check of vkCreateShaderModule).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(n EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "spirv_to_c: ${IN} is ${n} hex digits, not a whole number of 32-bit words")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])" "0x\\4\\3\\2\\1u,"
       words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n    " words "${words}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/spirv_to_c.cmake. Do not edit. */\n"
                  "const uint32_t ${NAME}[] = {\n    ${words}\n};\n")
