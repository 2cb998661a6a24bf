@problemName Tiny
@timeStamps false
@univariate false
@dimensions 2
@seriesLength 3
@classLabel true walk run sit
@data
1,1,1:2,2,2:run
3,3,3:4,4,4:walk
