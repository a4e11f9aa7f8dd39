#!/usr/bin/env python3
"""Reports long function bodies in src/ and include/ (run from the repository root).

Prints how many functions are over 60, 80 and 100 lines, then those over the limit given as
the first argument (default 80) as (lines, file, line, signature). A brace-matching heuristic,
not a parser: a signature wrapped onto a second indented line can be miscounted. A report for
reviews, not a ctest.
"""
import re,sys,os
res=[]
for root in ['src','include']:
    for dp,dn,fn in os.walk(root):
        for f in fn:
            if not f.endswith(('.cpp','.hpp')): continue
            p=os.path.join(dp,f); lines=open(p).read().split('\n')
            i=0
            while i<len(lines):
                l=lines[i]
                # function def start: line at col0 or 4 (class inline) ending with '{' and containing '('
                m=re.match(r'^(\s{0,4})\S.*\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>]+)?\s*\{\s*$', l)
                if m and not re.match(r'^\s*(if|for|while|switch|else|do|namespace|struct|class|enum|return|catch|try)\b', l.strip()) and '=' not in l.split('(')[0]:
                    ind=m.group(1)
                    # find closing brace at same indentation
                    j=i+1
                    while j<len(lines) and lines[j]!=ind+'}' and lines[j]!=ind+'};':
                        j+=1
                    n=j-i+1
                    # find the name: look back for signature start
                    k=i
                    while k>0 and not re.match(r'^\s{0,4}[\w:<>~]', lines[k]) : k-=1
                    res.append((n,p,i+1,lines[k].strip()[:80]))
                    i=j+1; continue
                i+=1
res.sort(reverse=True)
th=[60,80,100]
for t in th: print(t, sum(1 for r in res if r[0]>t))
for r in res:
    if r[0]>int(sys.argv[1] if len(sys.argv)>1 else 80): print(r)
