import sys
IDENT='"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"'
def gen(path, counters, launches):
    M=(1<<64)-1
    with open(path,'w') as w:
        w.write("==PROF== Connected to process 4242 (/usr/bin/python3.12)\n==PROF== Disconnected from process 4242\n")
        w.write(IDENT+''.join(f',"unit{c%97}__counter_{c:05}.sum"' for c in range(counters))+"\n")
        units=["ns","byte","%","cycle","","inst"]
        w.write(',""'.join(['""']*11) if False else ','.join(['""']*11))
        w.write(''.join(f',"{units[c%6]}"' for c in range(counters))+"\n")
        x=0x9E3779B97F4A7C15
        for l in range(launches):
            k="void matmul_tiled<32>(const float *, const float *, float *, int)" if l%2==0 else "void reduce(float const*, float*, int)"
            parts=[f'"{l}","4242","python3.12","127.0.0.1","{k}","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0"']
            for c in range(counters):
                x^=(x<<13)&M; x^=x>>7; x^=(x<<17)&M
                parts.append(f'"{x%100000}.{x%100:02}"' if c%3==0 else f'"{x%10000000}"')
            w.write(','.join(parts)+"\n")
gen(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
