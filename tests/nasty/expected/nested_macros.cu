#include <hip/hip_runtime.h>
#define M0(x) hipFree(x)
#define M1(x) M0((x))
#define M2(x) M1((x))
#define M3(x) M2((x))
#define M4(x) M3((x))
#define M5(x) M4((x))
#define M6(x) M5((x))
#define M7(x) M6((x))
#define M8(x) M7((x))
#define M9(x) M8((x))
#define M10(x) M9((x))
#define M11(x) M10((x))
#define M12(x) M11((x))
#define M13(x) M12((x))
#define M14(x) M13((x))
#define M15(x) M14((x))
#define M16(x) M15((x))
#define M17(x) M16((x))
#define M18(x) M17((x))
#define M19(x) M18((x))
#define M20(x) M19((x))
#define M21(x) M20((x))
#define M22(x) M21((x))
#define M23(x) M22((x))
#define M24(x) M23((x))
#define M25(x) M24((x))
#define M26(x) M25((x))
#define M27(x) M26((x))
#define M28(x) M27((x))
#define M29(x) M28((x))
#define M30(x) M29((x))
#define M31(x) M30((x))
#define M32(x) M31((x))
#define M33(x) M32((x))
#define M34(x) M33((x))
#define M35(x) M34((x))
#define M36(x) M35((x))
#define M37(x) M36((x))
#define M38(x) M37((x))
#define M39(x) M38((x))
#define M40(x) M39((x))
#define M41(x) M40((x))
#define M42(x) M41((x))
#define M43(x) M42((x))
#define M44(x) M43((x))
#define M45(x) M44((x))
#define M46(x) M45((x))
#define M47(x) M46((x))
#define M48(x) M47((x))
#define M49(x) M48((x))
#define M50(x) M49((x))
#define M51(x) M50((x))
#define M52(x) M51((x))
#define M53(x) M52((x))
#define M54(x) M53((x))
#define M55(x) M54((x))
#define M56(x) M55((x))
#define M57(x) M56((x))
#define M58(x) M57((x))
#define M59(x) M58((x))
#define M60(x) M59((x))
#define M61(x) M60((x))
#define M62(x) M61((x))
#define M63(x) M62((x))
#define M64(x) M63((x))
#define M65(x) M64((x))
#define M66(x) M65((x))
#define M67(x) M66((x))
#define M68(x) M67((x))
#define M69(x) M68((x))
#define M70(x) M69((x))
#define M71(x) M70((x))
#define M72(x) M71((x))
#define M73(x) M72((x))
#define M74(x) M73((x))
#define M75(x) M74((x))
#define M76(x) M75((x))
#define M77(x) M76((x))
#define M78(x) M77((x))
#define M79(x) M78((x))
#define M80(x) M79((x))
#define M81(x) M80((x))
#define M82(x) M81((x))
#define M83(x) M82((x))
#define M84(x) M83((x))
#define M85(x) M84((x))
#define M86(x) M85((x))
#define M87(x) M86((x))
#define M88(x) M87((x))
#define M89(x) M88((x))
#define M90(x) M89((x))
#define M91(x) M90((x))
#define M92(x) M91((x))
#define M93(x) M92((x))
#define M94(x) M93((x))
#define M95(x) M94((x))
#define M96(x) M95((x))
#define M97(x) M96((x))
#define M98(x) M97((x))
#define M99(x) M98((x))
#define M100(x) M99((x))
#define M101(x) M100((x))
#define M102(x) M101((x))
#define M103(x) M102((x))
#define M104(x) M103((x))
#define M105(x) M104((x))
#define M106(x) M105((x))
#define M107(x) M106((x))
#define M108(x) M107((x))
#define M109(x) M108((x))
#define M110(x) M109((x))
#define M111(x) M110((x))
#define M112(x) M111((x))
#define M113(x) M112((x))
#define M114(x) M113((x))
#define M115(x) M114((x))
#define M116(x) M115((x))
#define M117(x) M116((x))
#define M118(x) M117((x))
#define M119(x) M118((x))
#define M120(x) M119((x))
#define M121(x) M120((x))
#define M122(x) M121((x))
#define M123(x) M122((x))
#define M124(x) M123((x))
#define M125(x) M124((x))
#define M126(x) M125((x))
#define M127(x) M126((x))
#define M128(x) M127((x))
#define M129(x) M128((x))
#define M130(x) M129((x))
#define M131(x) M130((x))
#define M132(x) M131((x))
#define M133(x) M132((x))
#define M134(x) M133((x))
#define M135(x) M134((x))
#define M136(x) M135((x))
#define M137(x) M136((x))
#define M138(x) M137((x))
#define M139(x) M138((x))
#define M140(x) M139((x))
#define M141(x) M140((x))
#define M142(x) M141((x))
#define M143(x) M142((x))
#define M144(x) M143((x))
#define M145(x) M144((x))
#define M146(x) M145((x))
#define M147(x) M146((x))
#define M148(x) M147((x))
#define M149(x) M148((x))
#define M150(x) M149((x))
#define M151(x) M150((x))
#define M152(x) M151((x))
#define M153(x) M152((x))
#define M154(x) M153((x))
#define M155(x) M154((x))
#define M156(x) M155((x))
#define M157(x) M156((x))
#define M158(x) M157((x))
#define M159(x) M158((x))
#define M160(x) M159((x))
#define M161(x) M160((x))
#define M162(x) M161((x))
#define M163(x) M162((x))
#define M164(x) M163((x))
#define M165(x) M164((x))
#define M166(x) M165((x))
#define M167(x) M166((x))
#define M168(x) M167((x))
#define M169(x) M168((x))
#define M170(x) M169((x))
#define M171(x) M170((x))
#define M172(x) M171((x))
#define M173(x) M172((x))
#define M174(x) M173((x))
#define M175(x) M174((x))
#define M176(x) M175((x))
#define M177(x) M176((x))
#define M178(x) M177((x))
#define M179(x) M178((x))
#define M180(x) M179((x))
#define M181(x) M180((x))
#define M182(x) M181((x))
#define M183(x) M182((x))
#define M184(x) M183((x))
#define M185(x) M184((x))
#define M186(x) M185((x))
#define M187(x) M186((x))
#define M188(x) M187((x))
#define M189(x) M188((x))
#define M190(x) M189((x))
#define M191(x) M190((x))
#define M192(x) M191((x))
#define M193(x) M192((x))
#define M194(x) M193((x))
#define M195(x) M194((x))
#define M196(x) M195((x))
#define M197(x) M196((x))
#define M198(x) M197((x))
#define M199(x) M198((x))
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
#if defined(CUDA_VERSION)
void f() { M199(0); int v = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((hipSuccess)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))); }
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
#endif
