(function(){
const D=JSON.parse(document.getElementById('run-data').textContent);
const N=D.n, ROWS=100, LROWS=50, ids=D.ids;
function unrun(enc){const out=new Float64Array(N);let v=0,k=0;for(let i=0;i<enc.length;i+=2){for(let r=0;r<enc[i+1];r++){v+=enc[i];out[k++]=v;}}return out;}
const T1=unrun(D.t1).map(x=>x/1000),Q=unrun(D.q),KV=unrun(D.kv),ND=unrun(D.nd),T0=new Float64Array(N);
for(let k=1;k<N;k++)T0[k]=T1[k-1];for(const [k,t] of D.idle)T0[k]=t/1000;
const by=(key)=>{const m=new Map();for(const r of D[key]){if(!m.has(r[0]))m.set(r[0],[]);m.get(r[0]).push(r.slice(1));}return m;};
const PF=by('pf'),PE=by('pe'),SO=by('so'),SI=by('si'),RJ=by('rj'),CC=by('cc'),DIN=by('din'),DOUT=by('dout'),MK=D.mk?by('mk'):new Map();
const marks=[[]];
function apply(cur,i){const o=DOUT.get(i),n=DIN.get(i);let c=cur;if(o){const out=new Set(o.map(x=>x[0]));c=c.filter(x=>!out.has(x));}if(n)c=c.concat(n.map(x=>x[0]));return c;}
function before(k){ // the decode list kept before step k: checkpoints every 500 steps
  const c=Math.floor(k/500);
  while(marks.length<=c){const m=marks.length;let cur=marks[m-1];for(let i=(m-1)*500;i<m*500;i++)cur=apply(cur,i);marks.push(cur);}
  let cur=marks[c];for(let i=c*500;i<k;i++)cur=apply(cur,i);return cur;
}
const names=(list)=>list.map(x=>ids[x[0]]).join(', ');
function cell(text,num){const td=document.createElement('td');td.textContent=text;if(num)td.className='num';return td;}
let page=0, lpage=0;
function drawSteps(){
  const body=document.getElementById('steps-body');body.textContent='';
  const from=page*ROWS,to=Math.min(N,from+ROWS);let kept=before(from);
  for(let k=from;k<to;k++){
    kept=apply(kept,k);const dec=ND[k]?kept:[];
    const tr=document.createElement('tr');tr.id='step-'+k;
    if(D.diff&&D.diff.step===k){tr.className='diff';}
    tr.appendChild(cell((D.diff&&D.diff.step===k?'≠ ':'')+k,true));
    tr.appendChild(cell(T0[k].toFixed(2),true));tr.appendChild(cell(T1[k].toFixed(2),true));
    tr.appendChild(cell((PF.get(k)||[]).map(x=>ids[x[0]]+'['+x[1]+':'+(x[1]+x[2])+']').join(' ')));
    const dn=dec.map(x=>ids[x]);tr.appendChild(cell(dn.length>12?dn.slice(0,12).join(', ')+' … 共 '+dn.length+' 个':dn.join(', ')));
    tr.appendChild(cell(String(Q[k]),true));
    tr.appendChild(cell(D.pool?KV[k]+' / '+D.pool:String(KV[k]),true));
    const moves=[];if(PE.has(k))moves.push('抢占 '+names(PE.get(k)));if(SO.has(k))moves.push('换出 '+names(SO.get(k)));if(SI.has(k))moves.push('换入 '+names(SI.get(k)));if(MK.has(k))moves.push(MK.get(k)[0][0]);
    tr.appendChild(cell(moves.join('；')));tr.appendChild(cell(names(RJ.get(k)||[])));tr.appendChild(cell(names(CC.get(k)||[])));
    body.appendChild(tr);
  }
  pager('steps',page,Math.ceil(N/ROWS),from,to,N,'步',(p)=>{page=p;drawSteps();});
}
const SVG='http://www.w3.org/2000/svg', STATUS=['完成','被拒绝','被取消','未完成'];
function el(name,attrs){const e=document.createElementNS(SVG,name);for(const k in attrs)e.setAttribute(k,attrs[k]);return e;}
function drawLanes(){
  const body=document.getElementById('lanes-body');body.textContent='';
  const L=ids.length,from=lpage*LROWS,to=Math.min(L,from+LROWS),W=320,x=(t)=>(t/(D.end||1))*(W-4)+2;
  for(let n=from;n<to;n++){
    const tr=document.createElement('tr'),f=D.lf[n],e=D.le[n];
    const fmt=(v)=>v===null?'-':v.toFixed(2);
    tr.appendChild(cell(ids[n]));tr.appendChild(cell(fmt(D.la[n]),true));tr.appendChild(cell(fmt(D.lt[n]),true));tr.appendChild(cell(fmt(D.lm[n]),true));tr.appendChild(cell(STATUS[D.ls[n]]));
    const td=document.createElement('td');
    const svg=el('svg',{class:'lane',viewBox:'0 0 '+W+' 14',role:'img','aria-label':'请求 '+ids[n]+'：到达 '+fmt(D.la[n])+' ms，TTFT '+fmt(D.lt[n])+' ms，最大 ITL '+fmt(D.lm[n])+' ms，'+STATUS[D.ls[n]]});
    const wait=f!==null?f:(e!==null?e:D.la[n]);
    svg.appendChild(el('line',{class:'wait',x1:x(D.la[n]),x2:x(wait),y1:7,y2:7}));
    if(f!==null){svg.appendChild(el('line',{class:'run',x1:x(f),x2:x(e!==null?e:f),y1:7,y2:7}));
      for(const t of D.lk[n].slice(1))svg.appendChild(el('line',{class:'tick',x1:x(t),x2:x(t),y1:2,y2:12}));
      svg.appendChild(el('circle',{class:'first',cx:x(f),cy:7,r:3}));}
    if(D.ls[n]===1||D.ls[n]===2)svg.appendChild(el('circle',{class:'gone',cx:x(e),cy:7,r:3}));
    td.appendChild(svg);tr.appendChild(td);body.appendChild(tr);
  }
  pager('lanes',lpage,Math.ceil(L/LROWS),from,to,L,'个请求',(p)=>{lpage=p;drawLanes();});
}
function pager(name,p,pages,from,to,total,unit,go){
  const box=document.getElementById(name+'-pager');box.textContent='';
  const btn=(text,target,off)=>{const b=document.createElement('button');b.type='button';b.textContent=text;b.disabled=off;b.onclick=()=>go(target);box.appendChild(b);};
  btn('第一页',0,p===0);btn('上一页',p-1,p===0);btn('下一页',p+1,p>=pages-1);btn('最后一页',pages-1,p>=pages-1);
  const info=document.createElement('span');info.setAttribute('aria-live','polite');info.textContent='第 '+(total?from+1:0)+'–'+to+' '+unit+'，共 '+total+' '+unit;box.appendChild(info);
  document.getElementById(name+'-cap').textContent=(name==='steps'?'步 ':'请求 ')+(total?from+1:0)+'–'+to+'（共 '+total+'）';
  if(name==='steps'){const lab=document.createElement('label');lab.textContent='跳到第 ';const inp=document.createElement('input');inp.type='number';inp.min=0;inp.max=Math.max(0,total-1);inp.id='goto-step';
    lab.appendChild(inp);lab.appendChild(document.createTextNode(' 步'));box.appendChild(lab);
    inp.onchange=()=>{const k=Math.max(0,Math.min(total-1,parseInt(inp.value,10)||0));page=Math.floor(k/ROWS);drawSteps();const r=document.getElementById('step-'+k);if(r)r.scrollIntoView();};}
}
drawSteps();drawLanes();
const g=document.getElementById('go-diff');
if(g&&D.diff){g.onclick=()=>{page=Math.floor(Math.min(D.diff.step,Math.max(N-1,0))/ROWS);drawSteps();const r=document.getElementById('step-'+D.diff.step);if(r){r.scrollIntoView();r.tabIndex=-1;r.focus();}};}
})();
