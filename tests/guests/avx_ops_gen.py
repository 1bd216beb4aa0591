#!/usr/bin/env python3
# avx_ops_gen.py - writes avx_ops.h, the instruction forms that avx_ops.c
# tests (python3 avx_ops_gen.py > avx_ops.h).  Registers: zmm0 is the
# destination, zmm1/zmm2 (zmm16/zmm17 for EVEX-only registers) the sources,
# zmm3 a count or blend mask, zmm5 gather indexes, k1/k2 masks, k3 a mask
# result, (%rsi) a 256-byte buffer, r8 = 32 an index register.
# VSCALEFPS/PD are left out: their exception flags on AMD Zen 4 in some
# corner cases (docs/EMU.md) are not the ones crec computes.
V = {'x': 'xmm', 'y': 'ymm', 'z': 'zmm'}
tests = []
def t(name, insn): tests.append((name, insn))

def three(mn, sizes='xyz', mem=True, mask=True, evex_only=False, vex_only=False):
    for s in sizes:
        r = V[s]
        t(f'{mn}_{s}', f'{mn} %%{r}2, %%{r}1, %%{r}0')
        if mem: t(f'{mn}_{s}m', f'{mn} (%%rsi), %%{r}1, %%{r}0')
        if s == 'z' or (mask and not vex_only and s != 'z' and False):
            pass
    if mask and not vex_only and mn not in ('vpsadbw',):
        if 'x' not in sizes:
            t(f'{mn}_zk', f'{mn} %%zmm2, %%zmm1, %%zmm0%{{%%k1%}}')
            return
        t(f'{mn}_zk', f'{mn} %%zmm2, %%zmm1, %%zmm0%{{%%k1%}}')
        t(f'{mn}_ykz', f'{mn} %%ymm17, %%ymm16, %%ymm0%{{%%k1%}}%{{z%}}')
        t(f'{mn}_xk16', f'{mn} %%xmm2, %%xmm17, %%xmm16%{{%%k2%}}')

int3 = ['vpaddb','vpaddw','vpaddd','vpaddq','vpsubb','vpsubw','vpsubd','vpsubq',
        'vpaddsb','vpaddsw','vpaddusb','vpaddusw','vpsubsb','vpsubsw','vpsubusb','vpsubusw',
        'vpminsb','vpminsw','vpminsd','vpminub','vpminuw','vpminud','vpmaxsb','vpmaxsw','vpmaxsd',
        'vpmaxub','vpmaxuw','vpmaxud','vpavgb','vpavgw','vpmullw','vpmulld','vpmulhw','vpmulhuw',
        'vpmulhrsw','vpmuludq','vpmuldq','vpmaddwd','vpmaddubsw','vpsadbw','vpshufb',
        'vpunpcklbw','vpunpcklwd','vpunpckldq','vpunpcklqdq','vpunpckhbw','vpunpckhwd','vpunpckhdq',
        'vpunpckhqdq','vpacksswb','vpackuswb','vpackssdw','vpackusdw',
        'vpsllvd','vpsllvq','vpsrlvd','vpsrlvq','vpsravd',
        'vunpcklps','vunpcklpd','vunpckhps','vunpckhpd','vpermd','vpermps',
        'vaddps','vaddpd','vsubps','vsubpd','vmulps','vmulpd','vdivps','vdivpd','vminps','vminpd',
        'vmaxps','vmaxpd','vandps','vandpd','vandnps','vandnpd','vorps','vorpd','vxorps','vxorpd']
for mn in int3:
    sizes = 'xyz'
    if mn in ('vpermd','vpermps'): sizes = 'yz'
    three(mn, sizes)
for mn in ['vpand','vpandn','vpor','vpxor','vphaddw','vphaddd','vphaddsw','vphsubw','vphsubd','vphsubsw',
           'vpsignb','vpsignw','vpsignd','vpcmpeqb','vpcmpeqw','vpcmpeqd','vpcmpeqq','vpcmpgtb',
           'vpcmpgtw','vpcmpgtd','vpcmpgtq','vhaddps','vhaddpd','vhsubps','vhsubpd','vaddsubps','vaddsubpd']:
    three(mn, 'xy', mask=False)
for mn in ['vpandd','vpandq','vpandnd','vpandnq','vpord','vporq','vpxord','vpxorq','vpmullq','vpminsq',
           'vpminuq','vpmaxsq','vpmaxuq','vpsllvw','vpsrlvw','vpsravw','vpsravq','vprolvd','vprolvq',
           'vprorvd','vprorvq','vpermb','vpermw','vpermq','vpermpd','vpermt2d','vpermt2q','vpermt2b',
           'vpermt2w','vpermt2ps','vpermt2pd','vpermi2d','vpermi2q','vpermi2b','vpermi2w',
           'vpblendmd','vpblendmq','vpblendmb','vpblendmw','vblendmps','vblendmpd','vpmultishiftqb',
           'vpdpbusd','vpdpbusds','vpdpwssd','vpdpwssds']:
    sizes = 'xyz'
    if mn in ('vpermq','vpermpd'): sizes = 'yz'
    for s in sizes:
        r = V[s]
        t(f'{mn}_{s}', f'{mn} %%{r}2, %%{r}1, %%{r}0')
        t(f'{mn}_{s}m', f'{mn} (%%rsi), %%{r}1, %%{r}0')
    t(f'{mn}_zk', f'{mn} %%zmm2, %%zmm1, %%zmm0%{{%%k1%}}')
    t(f'{mn}_zkz', f'{mn} %%zmm17, %%zmm16, %%zmm0%{{%%k1%}}%{{z%}}')
# broadcast forms
for mn, w in [('vpaddd','4'),('vpaddq','8'),('vaddps','4'),('vmulpd','8'),('vpandq','8'),('vpmulld','4')]:
    t(f'{mn}_bcst', f'{mn} (%%rsi)%{{1to16%}}, %%zmm1, %%zmm0' if w=='4' else f'{mn} (%%rsi)%{{1to8%}}, %%zmm1, %%zmm0')
    t(f'{mn}_bcsty', f'{mn} 8(%%rsi)%{{1to8%}}, %%ymm1, %%ymm0%{{%%k1%}}' if w=='4' else f'{mn} 8(%%rsi)%{{1to4%}}, %%ymm1, %%ymm0%{{%%k1%}}')
# disp8*N compression
t('vpaddd_disp8', 'vpaddd 128(%%rsi), %%zmm1, %%zmm0')
t('vpaddd_disp8y', 'vpaddd -32(%%rsi,%%r8,2), %%ymm1, %%ymm0')
t('vmovdqu32_disp8', 'vmovdqu32 64(%%rsi), %%zmm0')
t('vbroadcastss_disp8', 'vbroadcastss 12(%%rsi), %%zmm0')
# scalar fp
for mn in ['vaddss','vaddsd','vsubss','vsubsd','vmulss','vmulsd','vdivss','vdivsd','vminss','vminsd','vmaxss','vmaxsd','vsqrtss','vsqrtsd']:
    r='xmm'
    t(f'{mn}', f'{mn} %%xmm2, %%xmm1, %%xmm0')
    t(f'{mn}_m', f'{mn} (%%rsi), %%xmm1, %%xmm0')
    t(f'{mn}_k', f'{mn} %%xmm2, %%xmm1, %%xmm0%{{%%k1%}}')
    t(f'{mn}_kz16', f'{mn} %%xmm17, %%xmm16, %%xmm0%{{%%k1%}}%{{z%}}')
t('vaddps_rd', 'vaddps %{{rd-sae%}}, %%zmm2, %%zmm1, %%zmm0')
t('vmulpd_ru', 'vmulpd %{{ru-sae%}}, %%zmm2, %%zmm1, %%zmm0')
t('vaddss_rz', 'vaddss %{{rz-sae%}}, %%xmm2, %%xmm1, %%xmm0')
t('vdivsd_rn', 'vdivsd %{{rn-sae%}}, %%xmm2, %%xmm1, %%xmm0')
for mn in ['vsqrtps','vsqrtpd','vcvtdq2ps','vcvtps2dq','vcvttps2dq','vrndscaleps $0x1,','vrndscalepd $0x2,', 'vgetexpps','vgetexppd']:
    for s in 'xyz':
        r = V[s]
        mm = mn.split()[0]
        imm = (mn.split()[1] + ' ') if ' ' in mn else ''
        nm = mm
        t(f'{nm}_{s}', f'{mm} {imm}%%{r}2, %%{r}0')
        t(f'{nm}_{s}m', f'{mm} {imm}(%%rsi), %%{r}0')
    t(f'{nm}_zk', f'{mm} {imm}%%zmm2, %%zmm0%{{%%k1%}}')
for mn in ['vroundps $1,','vroundps $6,','vroundpd $2,','vroundpd $11,']:
    mm, imm = mn.split()
    for s in 'xy':
        r=V[s]
        t(f'{mm}{imm[1:-1]}_{s}', f'{mm} {imm} %%{r}2, %%{r}0')
for mn in ['vroundss $0,','vroundsd $3,','vroundss $12,']:
    mm, imm = mn.split()
    t(f'{mm}{imm[1:-1]}', f'{mm} {imm} %%xmm2, %%xmm1, %%xmm0')
# conversions
conv = [('vcvtps2pd','x','x'),('vcvtps2pd','x','y'),('vcvtps2pd','y','z'),('vcvtpd2psx','x','x'),('vcvtpd2psy','y','x'),('vcvtpd2ps','z','y'),
        ('vcvtdq2pd','x','x'),('vcvtdq2pd','x','y'),('vcvtdq2pd','y','z'),('vcvtpd2dqx','x','x'),('vcvtpd2dqy','y','x'),('vcvttpd2dqy','y','x'),('vcvttpd2dq','z','y'),
        ('vcvtph2ps','x','y'),('vcvtph2ps','y','z'),('vcvtudq2ps','z','z'),('vcvtps2udq','z','z'),('vcvttps2udq','y','y'),
        ('vcvtqq2pd','z','z'),('vcvtuqq2pd','y','y'),('vcvtpd2qq','z','z'),('vcvttpd2uqq','z','z'),('vcvtqq2psy','y','x'),('vcvtps2qq','y','z'),('vcvttps2uqq','x','y'),('vcvtudq2pd','x','y')]
for mn, a, b in conv:
    t(f'{mn}_{a}{b}', f'{mn} %%{V[a]}2, %%{V[b]}0')
t('vcvtps2ph_y', 'vcvtps2ph $0, %%ymm2, %%xmm0')
t('vcvtps2ph_x4', 'vcvtps2ph $4, %%xmm2, %%xmm0')
t('vcvtps2ph_zm', 'vcvtps2ph $1, %%zmm2, 64(%%rsi)')
t('vcvtps2ph_y3', 'vcvtps2ph $3, %%ymm2, %%xmm0')
for mn in ['vcvtss2sd','vcvtsd2ss']:
    t(mn, f'{mn} %%xmm2, %%xmm1, %%xmm0')
    t(mn+'_m', f'{mn} (%%rsi), %%xmm1, %%xmm0')
for mn in ['vcvtsi2ss %%eax,','vcvtsi2sd %%rax,','vcvtsi2ssq %%rbx,','vcvtusi2ss %%eax,','vcvtusi2sd %%rbx,','vcvtusi2ssq %%rax,', 'vcvtsi2sdl (%%rsi),']:
    t('cvti_'+str(len(tests)), f'{mn} %%xmm1, %%xmm0')
for mn in ['vcvtss2si %%xmm2, %%eax','vcvtsd2si %%xmm2, %%rax','vcvttss2si %%xmm2, %%rax','vcvttsd2si %%xmm2, %%eax','vcvtss2usi %%xmm2, %%eax','vcvttsd2usi %%xmm2, %%rax','vcvtsd2si (%%rsi), %%rcx']:
    t('cvt2i_'+str(len(tests)), mn)
# compares
for p in [0,1,2,3,4,5,6,7,8,13,14,17,20,29,31]:
    t(f'vcmpps{p}_y', f'vcmpps ${p}, %%ymm2, %%ymm1, %%ymm0')
    t(f'vcmppd{p}_x', f'vcmppd ${p}, %%xmm2, %%xmm1, %%xmm0')
    t(f'vcmpps{p}_zk', f'vcmpps ${p}, %%zmm2, %%zmm1, %%k3%{{%%k1%}}')
    t(f'vcmpsd{p}', f'vcmpsd ${p}, %%xmm2, %%xmm1, %%xmm0')
for mn in ['vucomiss','vcomiss','vucomisd','vcomisd']:
    t(mn, f'{mn} %%xmm2, %%xmm1')
    t(mn+'_m', f'{mn} (%%rsi), %%xmm1')
for mn in ['vpcmpeqb','vpcmpeqd','vpcmpgtw','vpcmpgtq','vpcmpeqq']:
    t(mn+'_zk', f'{mn} %%zmm2, %%zmm1, %%k3%{{%%k1%}}')
    t(mn+'_yk', f'{mn} (%%rsi), %%ymm1, %%k3')
for mn in ['vpcmpd','vpcmpud','vpcmpq','vpcmpuq','vpcmpb','vpcmpub','vpcmpw','vpcmpuw']:
    for p in [0,1,2,4,5,6]:
        t(f'{mn}{p}', f'{mn} ${p}, %%zmm2, %%zmm1, %%k3%{{%%k2%}}')
    t(f'{mn}_ym', f'{mn} $1, (%%rsi), %%ymm1, %%k3')
for mn in ['vptestmd','vptestmq','vptestnmb','vptestnmw','vptestmb']:
    t(mn, f'{mn} %%zmm2, %%zmm1, %%k3%{{%%k1%}}')
# shifts
for mn in ['vpsllw','vpslld','vpsllq','vpsrlw','vpsrld','vpsrlq','vpsraw','vpsrad']:
    for s in 'xyz':
        t(f'{mn}_i{s}', f'{mn} $5, %%{V[s]}2, %%{V[s]}0')
        t(f'{mn}_x{s}', f'{mn} %%xmm3, %%{V[s]}2, %%{V[s]}0')
    t(f'{mn}_big', f'{mn} $33, %%ymm2, %%ymm0')
    t(f'{mn}_mi', f'{mn} $3, (%%rsi), %%zmm0%{{%%k1%}}')
t('vpsraq_i', 'vpsraq $7, %%zmm2, %%zmm0')
t('vpsraq_x', 'vpsraq %%xmm3, %%ymm2, %%ymm0')
t('vprold', 'vprold $9, %%zmm2, %%zmm0')
t('vprorq', 'vprorq $13, %%ymm2, %%ymm0%{{%%k1%}}')
for s in 'xyz':
    t(f'vpslldq_{s}', f'vpslldq $5, %%{V[s]}2, %%{V[s]}0')
    t(f'vpsrldq_{s}', f'vpsrldq $11, %%{V[s]}2, %%{V[s]}0')
    t(f'vpalignr_{s}', f'vpalignr $7, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vpshufd_{s}', f'vpshufd $0x1b, %%{V[s]}2, %%{V[s]}0')
    t(f'vpshufhw_{s}', f'vpshufhw $0x4e, %%{V[s]}2, %%{V[s]}0')
    t(f'vpshuflw_{s}', f'vpshuflw $0x93, (%%rsi), %%{V[s]}0')
    t(f'vshufps_{s}', f'vshufps $0x72, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vshufpd_{s}', f'vshufpd $0x5, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vpermilps_i{s}', f'vpermilps $0x39, %%{V[s]}2, %%{V[s]}0')
    t(f'vpermilpd_i{s}', f'vpermilpd $0x6, %%{V[s]}2, %%{V[s]}0')
    t(f'vpermilps_v{s}', f'vpermilps %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vpermilpd_v{s}', f'vpermilpd %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
for s in 'xy':
    t(f'vpblendw_{s}', f'vpblendw $0x5a, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vblendps_{s}', f'vblendps $0xa5, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vblendpd_{s}', f'vblendpd $0x9, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vpblendd_{s}', f'vpblendd $0x3c, (%%rsi), %%{V[s]}1, %%{V[s]}0')
    t(f'vpblendvb_{s}', f'vpblendvb %%{V[s]}3, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vblendvps_{s}', f'vblendvps %%{V[s]}3, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
    t(f'vblendvpd_{s}', f'vblendvpd %%{V[s]}3, (%%rsi), %%{V[s]}1, %%{V[s]}0')
    t(f'vptest_{s}', f'vptest %%{V[s]}2, %%{V[s]}1')
    t(f'vtestps_{s}', f'vtestps %%{V[s]}2, %%{V[s]}1')
    t(f'vtestpd_{s}', f'vtestpd (%%rsi), %%{V[s]}1')
    t(f'vdpps_{s}', f'vdpps $0xf3, %%{V[s]}2, %%{V[s]}1, %%{V[s]}0')
t('vdppd', 'vdppd $0x31, %%xmm2, %%xmm1, %%xmm0')
t('vperm2f128', 'vperm2f128 $0x21, %%ymm2, %%ymm1, %%ymm0')
t('vperm2i128', 'vperm2i128 $0x83, (%%rsi), %%ymm1, %%ymm0')
t('vpermq_i', 'vpermq $0x1b, %%ymm2, %%ymm0')
t('vpermpd_iz', 'vpermpd $0x4e, %%zmm2, %%zmm0')
t('valignd', 'valignd $5, %%zmm2, %%zmm1, %%zmm0')
t('valignq_y', 'valignq $3, %%ymm2, %%ymm1, %%ymm0%{{%%k1%}}%{{z%}}')
t('vshuff32x4', 'vshuff32x4 $0x4e, %%zmm2, %%zmm1, %%zmm0')
t('vshufi64x2', 'vshufi64x2 $0x1, %%ymm2, %%ymm1, %%ymm0')
for imm in ['0x96','0xe8','0xca','0x01','0xff']:
    t(f'vpternlogd{imm}', f'vpternlogd ${imm}, %%zmm2, %%zmm1, %%zmm0')
    t(f'vpternlogq{imm}y', f'vpternlogq ${imm}, (%%rsi), %%ymm1, %%ymm0%{{%%k1%}}')
# moves
for mn in ['vmovdqa','vmovdqu','vmovaps','vmovups','vmovapd','vmovupd']:
    for s in 'xy':
        t(f'{mn}_l{s}', f'{mn} (%%rsi), %%{V[s]}0')
        t(f'{mn}_s{s}', f'{mn} %%{V[s]}2, 64(%%rsi)')
        t(f'{mn}_r{s}', f'{mn} %%{V[s]}2, %%{V[s]}0')
for mn in ['vmovdqa32','vmovdqa64','vmovdqu8','vmovdqu16','vmovdqu32','vmovdqu64','vmovaps','vmovupd']:
    t(f'{mn}_lzk', f'{mn} (%%rsi), %%zmm0%{{%%k1%}}')
    t(f'{mn}_lykz', f'{mn} (%%rsi), %%ymm16%{{%%k1%}}%{{z%}}')
    t(f'{mn}_szk', f'{mn} %%zmm2, 64(%%rsi)%{{%%k1%}}')
    t(f'{mn}_rxk', f'{mn} %%xmm17, %%xmm0%{{%%k2%}}')
for mn in ['vmovss','vmovsd']:
    t(mn+'_l', f'{mn} (%%rsi), %%xmm0')
    t(mn+'_s', f'{mn} %%xmm2, 8(%%rsi)')
    t(mn+'_r', f'{mn} %%xmm2, %%xmm1, %%xmm0')
    t(mn+'_lk', f'{mn} (%%rsi), %%xmm0%{{%%k1%}}%{{z%}}')
    t(mn+'_rk', f'{mn} %%xmm2, %%xmm1, %%xmm0%{{%%k1%}}')
t('vmovd_to', 'vmovd %%eax, %%xmm0')
t('vmovq_to', 'vmovq %%rbx, %%xmm0')
t('vmovd_from', 'vmovd %%xmm2, %%ecx')
t('vmovq_from', 'vmovq %%xmm2, %%rcx')
t('vmovd_m', 'vmovd 4(%%rsi), %%xmm0')
t('vmovq_x', 'vmovq %%xmm2, %%xmm0')
t('vmovq_s', 'vmovq %%xmm2, 16(%%rsi)')
t('vmovq_l', 'vmovq 16(%%rsi), %%xmm0')
t('vmovd_16', 'vmovd %%eax, %%xmm16')
t('vmovlps', 'vmovlps (%%rsi), %%xmm1, %%xmm0')
t('vmovhps', 'vmovhps 8(%%rsi), %%xmm1, %%xmm0')
t('vmovlpd', 'vmovlpd (%%rsi), %%xmm1, %%xmm0')
t('vmovhpd', 'vmovhpd (%%rsi), %%xmm1, %%xmm0')
t('vmovhlps', 'vmovhlps %%xmm2, %%xmm1, %%xmm0')
t('vmovlhps', 'vmovlhps %%xmm2, %%xmm1, %%xmm0')
t('vmovlps_s', 'vmovlps %%xmm2, 24(%%rsi)')
t('vmovhps_s', 'vmovhps %%xmm2, 24(%%rsi)')
t('vmovsldup', 'vmovsldup %%ymm2, %%ymm0')
t('vmovshdup', 'vmovshdup (%%rsi), %%xmm0')
t('vmovddup_x', 'vmovddup 8(%%rsi), %%xmm0')
t('vmovddup_y', 'vmovddup %%ymm2, %%ymm0')
t('vmovddup_z', 'vmovddup %%zmm2, %%zmm0%{{%%k1%}}')
t('vlddqu', 'vlddqu 3(%%rsi), %%ymm0')
t('vmovntdq', 'vmovntdq %%ymm2, 64(%%rsi)')
t('vmovntdqa', 'vmovntdqa (%%rsi), %%ymm0')
t('vmovmskps', 'vmovmskps %%ymm2, %%eax')
t('vmovmskpd', 'vmovmskpd %%xmm2, %%ecx')
t('vpmovmskb_y', 'vpmovmskb %%ymm2, %%eax')
t('vpmovmskb_x', 'vpmovmskb %%xmm2, %%ebx')
t('vpinsrb', 'vpinsrb $5, %%eax, %%xmm1, %%xmm0')
t('vpinsrw', 'vpinsrw $3, 2(%%rsi), %%xmm1, %%xmm0')
t('vpinsrd', 'vpinsrd $2, %%ebx, %%xmm1, %%xmm0')
t('vpinsrq', 'vpinsrq $1, %%rax, %%xmm1, %%xmm0')
t('vpextrb', 'vpextrb $7, %%xmm2, %%eax')
t('vpextrw', 'vpextrw $5, %%xmm2, %%ecx')
t('vpextrw_m', 'vpextrw $6, %%xmm2, 2(%%rsi)')
t('vpextrd', 'vpextrd $3, %%xmm2, %%ebx')
t('vpextrq', 'vpextrq $1, %%xmm2, 40(%%rsi)')
t('vextractps', 'vextractps $2, %%xmm2, %%eax')
t('vinsertps', 'vinsertps $0x9c, %%xmm2, %%xmm1, %%xmm0')
t('vinsertps_m', 'vinsertps $0x21, 4(%%rsi), %%xmm1, %%xmm0')
t('vbroadcastss_r', 'vbroadcastss %%xmm2, %%ymm0')
t('vbroadcastss_m', 'vbroadcastss 4(%%rsi), %%xmm0')
t('vbroadcastsd', 'vbroadcastsd %%xmm2, %%ymm0')
t('vbroadcastf128', 'vbroadcastf128 16(%%rsi), %%ymm0')
t('vbroadcasti128', 'vbroadcasti128 (%%rsi), %%ymm0')
t('vpbroadcastb', 'vpbroadcastb %%xmm2, %%ymm0')
t('vpbroadcastw', 'vpbroadcastw 2(%%rsi), %%xmm0')
t('vpbroadcastd', 'vpbroadcastd %%xmm2, %%zmm0%{{%%k1%}}')
t('vpbroadcastq', 'vpbroadcastq 8(%%rsi), %%ymm0')
t('vpbroadcastd_gpr', 'vpbroadcastd %%eax, %%zmm0')
t('vpbroadcastb_gpr', 'vpbroadcastb %%ebx, %%ymm16')
t('vpbroadcastq_gpr', 'vpbroadcastq %%rcx, %%xmm0%{{%%k1%}}%{{z%}}')
t('vbroadcasti32x4', 'vbroadcasti32x4 16(%%rsi), %%zmm0')
t('vbroadcastf64x4', 'vbroadcastf64x4 (%%rsi), %%zmm0%{{%%k1%}}')
t('vbroadcasti32x2', 'vbroadcasti32x2 %%xmm2, %%zmm0')
t('vinserti128', 'vinserti128 $1, %%xmm2, %%ymm1, %%ymm0')
t('vinsertf128_m', 'vinsertf128 $0, 16(%%rsi), %%ymm1, %%ymm0')
t('vinserti32x4', 'vinserti32x4 $3, %%xmm2, %%zmm1, %%zmm0%{{%%k1%}}')
t('vinsertf64x4', 'vinsertf64x4 $1, (%%rsi), %%zmm1, %%zmm0')
t('vextracti128', 'vextracti128 $1, %%ymm2, %%xmm0')
t('vextractf128_m', 'vextractf128 $1, %%ymm2, 32(%%rsi)')
t('vextracti64x4', 'vextracti64x4 $1, %%zmm2, %%ymm0')
t('vextractf32x4', 'vextractf32x4 $2, %%zmm2, %%xmm0%{{%%k1%}}%{{z%}}')
t('vextracti32x8_m', 'vextracti32x8 $1, %%zmm2, 64(%%rsi)%{{%%k1%}}')
for a,b,c_ in [('b','w',1),('b','d',2),('b','q',3),('w','d',1),('w','q',2),('d','q',1)]:
    for sx in ['sx','zx']:
        mn = f'vpmov{sx}{a}{b}'
        t(mn+'_x', f'{mn} %%xmm2, %%xmm0')
        t(mn+'_y', f'{mn} (%%rsi), %%ymm0')
        t(mn+'_z', f'{mn} %%{"ymm" if c_ == 1 else "xmm"}2, %%zmm0%{{%%k1%}}')
for mn in ['vpmovqd','vpmovsqd','vpmovusqd','vpmovdb','vpmovsdb','vpmovusdb','vpmovwb','vpmovswb','vpmovuswb','vpmovqb','vpmovqw','vpmovdw','vpmovusdw']:
    t(mn, f'{mn} %%zmm2, %%xmm0' if mn not in ('vpmovqd','vpmovsqd','vpmovusqd','vpmovwb','vpmovswb','vpmovuswb','vpmovdw','vpmovusdw') else f'{mn} %%zmm2, %%ymm0')
    t(mn+'_m', f'{mn} %%ymm2, 32(%%rsi)%{{%%k1%}}')
for mn in ['vpabsb','vpabsw','vpabsd','vpabsq','vpopcntb','vpopcntw','vpopcntd','vpopcntq','vplzcntd','vplzcntq','vpconflictd','vpconflictq']:
    for s in 'xyz':
        if mn in ('vpabsb','vpabsw','vpabsd') or s != 'x' or True:
            t(f'{mn}_{s}', f'{mn} %%{V[s]}2, %%{V[s]}0')
    t(f'{mn}_m', f'{mn} (%%rsi), %%zmm0%{{%%k1%}}')
for mn in ['vpcompressd','vpcompressq','vcompressps','vpexpandd','vpexpandq','vexpandpd','vpcompressb','vpexpandw']:
    t(mn, f'{mn} %%zmm2, %%zmm0%{{%%k1%}}')
    t(mn+'_z', f'{mn} %%ymm2, %%ymm0%{{%%k1%}}%{{z%}}')
for mn in ['vpcompressd','vcompressps','vpcompressq']:
    t(mn+'_m', f'{mn} %%zmm2, 64(%%rsi)%{{%%k1%}}')
for mn in ['vpexpandd','vexpandps']:
    t(mn+'_m', f'{mn} 8(%%rsi), %%zmm0%{{%%k1%}}')
for mn in ['vpmovm2b','vpmovm2w','vpmovm2d','vpmovm2q']:
    t(mn, f'{mn} %%k1, %%zmm0')
for mn in ['vpmovb2m','vpmovw2m','vpmovd2m','vpmovq2m']:
    t(mn, f'{mn} %%zmm2, %%k3')
# FMA
for form in ['132','213','231']:
    for op in ['vfmadd','vfmsub','vfnmadd','vfnmsub','vfmaddsub','vfmsubadd']:
        for ty in ['ps','pd']:
            mn = f'{op}{form}{ty}'
            t(mn+'_y', f'{mn} %%ymm2, %%ymm1, %%ymm0')
            t(mn+'_zk', f'{mn} (%%rsi), %%zmm1, %%zmm0%{{%%k1%}}')
        if 'sub' in op and 'add' in op: continue
        for ty in ['ss','sd']:
            mn = f'{op}{form}{ty}'
            t(mn, f'{mn} %%xmm2, %%xmm1, %%xmm0')
            t(mn+'_mk', f'{mn} (%%rsi), %%xmm1, %%xmm0%{{%%k1%}}')
t('vfmadd231ps_rd', 'vfmadd231ps %{{rd-sae%}}, %%zmm2, %%zmm1, %%zmm0')
t('vfmadd213ps_bcst', 'vfmadd213ps 4(%%rsi)%{{1to16%}}, %%zmm1, %%zmm0')
# k regs
for mn in ['kandw','kandnw','korw','kxorw','kxnorw','kaddw','kandb','korq','kxord','kandnq','kaddb','kaddd']:
    t(mn, f'{mn} %%k2, %%k1, %%k3')
for mn in ['kunpckbw','kunpckwd','kunpckdq']:
    t(mn, f'{mn} %%k2, %%k1, %%k3')
for mn in ['knotw','knotq','knotb']:
    t(mn, f'{mn} %%k1, %%k3')
for mn in ['kortestw','kortestb','kortestq','ktestw','ktestd','ktestb']:
    t(mn, f'{mn} %%k2, %%k1')
t('kmovw_to', 'kmovw %%eax, %%k3')
t('kmovq_to', 'kmovq %%rbx, %%k3')
t('kmovb_from', 'kmovb %%k1, %%ecx')
t('kmovd_from', 'kmovd %%k2, %%eax')
t('kmovq_kk', 'kmovq %%k1, %%k3')
t('kmovw_m', 'kmovw 2(%%rsi), %%k3')
t('kmovq_sm', 'kmovq %%k1, 8(%%rsi)')
t('kshiftlw', 'kshiftlw $3, %%k1, %%k3')
t('kshiftrq', 'kshiftrq $17, %%k1, %%k3')
t('kshiftlb', 'kshiftlb $7, %%k2, %%k3')
t('kshiftrd', 'kshiftrd $40, %%k2, %%k3')
# gathers
t('vpgatherdd', 'vpgatherdd %%ymm3, (%%rsi,%%ymm5,4), %%ymm0')
t('vpgatherqq', 'vpgatherqq %%xmm3, 8(%%rsi,%%xmm5,2), %%xmm0')
t('vgatherdpd', 'vgatherdpd %%ymm3, (%%rsi,%%xmm5,4), %%ymm0')
t('vpgatherqd', 'vpgatherqd %%xmm3, (%%rsi,%%ymm5,1), %%xmm0')
t('vpgatherdd_z', 'vpgatherdd (%%rsi,%%zmm5,4), %%zmm0%{{%%k1%}}')
t('vgatherqps_z', 'vgatherqps 4(%%rsi,%%zmm5,1), %%ymm0%{{%%k1%}}')
# masked moves
t('vmaskmovps_l', 'vmaskmovps (%%rsi), %%ymm1, %%ymm0')
t('vmaskmovpd_s', 'vmaskmovpd %%ymm2, %%ymm1, 64(%%rsi)')
t('vpmaskmovd_l', 'vpmaskmovd (%%rsi), %%xmm1, %%xmm0')
t('vpmaskmovq_s', 'vpmaskmovq %%ymm2, %%ymm1, 32(%%rsi)')
t('vpclmulqdq_x', 'vpclmulqdq $0x10, %%xmm2, %%xmm1, %%xmm0')
t('vpclmulqdq_y', 'vpclmulqdq $0x01, %%ymm2, %%ymm1, %%ymm0')
t('vpclmulqdq_z', 'vpclmulqdq $0x11, (%%rsi), %%zmm1, %%zmm0')
t('vzeroupper', 'vzeroupper')
t('vzeroall', 'vzeroall')
t('vstmxcsr', 'vstmxcsr 4(%%rsi)')

print('/* avx_ops.h - written by avx_ops_gen.py: the forms avx_ops.c tests. */')
for name, insn in tests:
    print(f'T({name}, "{insn}")')
