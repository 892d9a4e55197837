// Constants of math_f64.glsl: polynomial coefficients and split constants, printed by
// fit_polynomials.py (mpmath). Do not edit by hand: refit and paste.
// EXP_P: exp_rational on [0, 0.120113], degree 4, fit error 5.12e-17
const double TVD_EXP_P0 = 0.1666666666666666LF;
const double TVD_EXP_P1 = -0.0027777777777564573LF;
const double TVD_EXP_P2 = 6.613756471707873e-05LF;
const double TVD_EXP_P3 = -1.6534060165972636e-06LF;
const double TVD_EXP_P4 = 4.1437725653582016e-08LF;
// LOG_P: log_atanh on [0, 0.0294373], degree 7, fit error 2.07e-18
const double TVD_LOG_P0 = 0.6666666666666666LF;
const double TVD_LOG_P1 = 0.4000000000000088LF;
const double TVD_LOG_P2 = 0.28571428570803614LF;
const double TVD_LOG_P3 = 0.22222222391713917LF;
const double TVD_LOG_P4 = 0.18181795640132906LF;
const double TVD_LOG_P5 = 0.15386239702814658LF;
const double TVD_LOG_P6 = 0.13268773138656886LF;
const double TVD_LOG_P7 = 0.13086626147840102LF;
// POW_LOG_P: pow_log on [0, 0.0103], degree 5, fit error 1.07e-16
const double TVD_POW_LOG_P0 = 0.5999999999999999LF;
const double TVD_POW_LOG_P1 = 0.42857142857216796LF;
const double TVD_POW_LOG_P2 = 0.3333333324964239LF;
const double TVD_POW_LOG_P3 = 0.27272761893328645LF;
const double TVD_POW_LOG_P4 = 0.23070457677637912LF;
const double TVD_POW_LOG_P5 = 0.20554850959810336LF;
// EXPM1_P: expm1_tail on [-0.346574, 0.346574], degree 10, fit error 9.95e-20
const double TVD_EXPM1_P0 = 0.16666666666666666LF;
const double TVD_EXPM1_P1 = 0.04166666666666667LF;
const double TVD_EXPM1_P2 = 0.008333333333333333LF;
const double TVD_EXPM1_P3 = 0.0013888888888883752LF;
const double TVD_EXPM1_P4 = 0.00019841269841266418LF;
const double TVD_EXPM1_P5 = 2.4801587325533363e-05LF;
const double TVD_EXPM1_P6 = 2.7557319239947517e-06LF;
const double TVD_EXPM1_P7 = 2.7557273661348637e-07LF;
const double TVD_EXPM1_P8 = 2.5052078014485868e-08LF;
const double TVD_EXPM1_P9 = 2.0914679376583935e-09LF;
const double TVD_EXPM1_P10 = 1.6084322823993442e-10LF;
// SIN_P: sin_tail on [0, 0.61685], degree 6, fit error 1.16e-20
const double TVD_SIN_P0 = -0.16666666666666666LF;
const double TVD_SIN_P1 = 0.008333333333333331LF;
const double TVD_SIN_P2 = -0.00019841269841265065LF;
const double TVD_SIN_P3 = 2.7557319219339167e-06LF;
const double TVD_SIN_P4 = -2.5052106232447578e-08LF;
const double TVD_SIN_P5 = 1.6058531618986147e-10LF;
const double TVD_SIN_P6 = -7.586697117706918e-13LF;
// COS_P: cos_tail on [0, 0.61685], degree 6, fit error 6.44e-22
const double TVD_COS_P0 = 0.041666666666666664LF;
const double TVD_COS_P1 = -0.0013888888888888887LF;
const double TVD_COS_P2 = 2.4801587301584645e-05LF;
const double TVD_COS_P3 = -2.7557319221402824e-07LF;
const double TVD_COS_P4 = 2.087675579108042e-09LF;
const double TVD_COS_P5 = -1.1470460887609959e-11LF;
const double TVD_COS_P6 = 4.7458719020432915e-14LF;
// ASIN_P: asin_tail on [0, 0.25], degree 12, fit error 1.5e-17
const double TVD_ASIN_P0 = 0.16666666666666669LF;
const double TVD_ASIN_P1 = 0.07499999999998433LF;
const double TVD_ASIN_P2 = 0.04464285714635543LF;
const double TVD_ASIN_P3 = 0.030381944138531247LF;
const double TVD_ASIN_P4 = 0.02237217294214989LF;
const double TVD_ASIN_P5 = 0.017352392720869973LF;
const double TVD_ASIN_P6 = 0.013971212973552933LF;
const double TVD_ASIN_P7 = 0.011479177415184906LF;
const double TVD_ASIN_P8 = 0.01032281435018578LF;
const double TVD_ASIN_P9 = 0.005457506718640358LF;
const double TVD_ASIN_P10 = 0.01740087944269402LF;
const double TVD_ASIN_P11 = -0.014851887071247204LF;
const double TVD_ASIN_P12 = 0.028757851367421566LF;
// ATAN_P: atan_tail on [0, 0.171573], degree 12, fit error 4.28e-20
const double TVD_ATAN_P0 = -0.3333333333333333LF;
const double TVD_ATAN_P1 = 0.19999999999999993LF;
const double TVD_ATAN_P2 = -0.14285714285711518LF;
const double TVD_ATAN_P3 = 0.11111111110754729LF;
const double TVD_ATAN_P4 = -0.0909090906700999LF;
const double TVD_ATAN_P5 = 0.07692306736000173LF;
const double TVD_ATAN_P6 = -0.06666642020055166LF;
const double TVD_ATAN_P7 = 0.058819252531928636LF;
const double TVD_ATAN_P8 = -0.05258041554297779LF;
const double TVD_ATAN_P9 = 0.04719395030027433LF;
const double TVD_ATAN_P10 = -0.04104436265755082LF;
const double TVD_ATAN_P11 = 0.030635704112969498LF;
const double TVD_ATAN_P12 = -0.01391822929102443LF;
// Constants split into a head with few significant bits and a tail
const double TVD_LN2_HI = 0.6931471803691238LF;  // 32 bits
const double TVD_LN2_LO = 1.9082149292705877e-10LF;
const double TVD_PIO2_HI = 1.5707963267341256LF;  // 33 bits
const double TVD_PIO2_LO = 6.077100506506192e-11LF;
const double TVD_PIO4_HI = 0.7853981633670628LF;  // 33 bits
const double TVD_PIO4_LO = 3.038550253253096e-11LF;
const double TVD_PI_HI = 3.1415926534682512LF;  // 33 bits
const double TVD_PI_LO = 1.2154201013012384e-10LF;
const double TVD_INV_LN2_HI = 1.4426950407214463LF;  // 32 bits
const double TVD_INV_LN2_LO = 1.6751713164886512e-10LF;
const double TVD_INV_LN10_HI = 0.4342944818781689LF;  // 32 bits
const double TVD_INV_LN10_LO = 2.5082946711645275e-11LF;
const double TVD_LOG10_2_HI = 0.3010299955494702LF;  // 32 bits
const double TVD_LOG10_2_LO = 1.1451100898021838e-10LF;
const double TVD_POW_CP_HI = 0.9617966937366873LF;  // 32 bits
const double TVD_POW_CP_LO = 1.8928830231719995e-10LF;
const double TVD_POW_LOG2_1_5_HI = 0.5849625004921108LF;  // 32 bits
const double TVD_POW_LOG2_1_5_LO = 2.290453330269201e-10LF;
const double TVD_PIO2_PART1 = 1.5707963267341256LF;  // 33 bits
const double TVD_PIO2_PART2 = 6.077100506303966e-11LF;  // 33 bits
const double TVD_PIO2_PART3 = 2.0222662487111665e-21LF;  // 33 bits
const double TVD_PIO2_PART4 = 8.4784276603689e-32LF;
// 2/pi in 32-bit words, most significant first (bits after the binary point)
const uint TVD_TWO_OVER_PI[40] = uint[40](
    0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u,
    0xfe5163abu, 0xdebbc561u, 0xb7246e3au, 0x424dd2e0u, 0x06492eeau, 0x09d1921cu,
    0xfe1deb1cu, 0xb129a73eu, 0xe88235f5u, 0x2ebb4484u, 0xe99c7026u, 0xb45f7e41u,
    0x3991d639u, 0x835339f4u, 0x9c845f8bu, 0xbdf9283bu, 0x1ff897ffu, 0xde05980fu,
    0xef2f118bu, 0x5a0a6d1fu, 0x6d367ecfu, 0x27cb09b7u, 0x4f463f66u, 0x9e5fea2du,
    0x7527bac7u, 0xebe5f17bu, 0x3d0739f7u, 0x8a5292eau, 0x6bfb5fb1u, 0x1f8d5d08u,
    0x56033046u, 0xfc7b6babu, 0xf0cfbc20u, 0x9af4361du);
